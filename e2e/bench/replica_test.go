package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildRingfire builds the ringfire binary of the working tree into a
// temporary directory that lives as long as b, and logs the commit it was
// built from.
func buildRingfire(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "ringfire")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/ringfire/ringfire/cmd/ringfire").CombinedOutput()
	if err != nil {
		b.Fatalf("go build ./cmd/ringfire: %v\n%s", err, out)
	}
	fmt.Printf("ringfire built from %s\n", revision())
	return bin
}

// revision names the commit of the working tree the binary was built from,
// and whether tracked files differed from it.
func revision() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	head, err := exec.CommandContext(ctx, "git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "an unknown commit (git: " + err.Error() + ")"
	}
	rev := "commit " + strings.TrimSpace(string(head))
	if changed, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(changed) > 0 {
		rev += " with uncommitted changes to tracked files"
	}
	return rev
}

// replicaArgs are the flags every replica of a run shares.
type replicaArgs struct {
	bin, etcd, kubeconfig, logDir, logLevel string
	qps, burst, workers                     int
}

// replicaProcess is one `ringfire run` process, stopped with SIGTERM (a
// graceful leave) by stopReplicas.
type replicaProcess struct {
	id      string
	addr    string // ops server: /metrics, /readyz, /status.json
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process is reaped
	http    *http.Client

	mu       sync.Mutex
	peakHeap float64   // highest go_memstats_heap_inuse_bytes sampled
	peakAt   time.Time // when it was sampled
}

// startReplica starts replica id; stopReplicas stops it. It runs in a
// process group of its own and dies with the benchmark binary (Pdeathsig).
func startReplica(b *testing.B, a replicaArgs, id string) *replicaProcess {
	b.Helper()
	port, err := freePort()
	if err != nil {
		b.Fatal(err)
	}
	r := &replicaProcess{
		id: id, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		logPath: filepath.Join(a.logDir, id+".log"), done: make(chan struct{}),
		http: &http.Client{Timeout: 5 * time.Second},
	}
	logFile, err := os.Create(r.logPath)
	if err != nil {
		b.Fatal(err)
	}
	r.cmd = exec.Command(a.bin, "run", "--id", id, "--etcd-endpoints", a.etcd, "--kubeconfig", a.kubeconfig,
		"--listen", r.addr, "--workers", strconv.Itoa(a.workers),
		// The stand-in admits and binds: ringfire's gang scheduler stays off.
		"--controllers", "job,queue,podgroup",
		"--kube-api-qps", strconv.Itoa(a.qps), "--kube-api-burst", strconv.Itoa(a.burst), "--log-level", a.logLevel)
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		logFile.Close()
		b.Fatalf("start replica %s: %v", id, err)
	}
	go func() {
		_ = r.cmd.Wait()
		logFile.Close()
		close(r.done)
	}()
	return r
}

// stopReplicas asks every replica to leave the ring at once (one by one,
// each leave would hand its slots to the others, which would list their
// pods), and kills the process group of any that has not exited within 20
// seconds.
func stopReplicas(b *testing.B, replicas []*replicaProcess) {
	for _, r := range replicas {
		_ = syscall.Kill(-r.pid(), syscall.SIGTERM)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, r := range replicas {
		select {
		case <-r.done:
		case <-time.After(time.Until(deadline)):
			b.Errorf("replica %s ignored SIGTERM for 20s; killing it (log %s)", r.id, r.logPath)
			_ = syscall.Kill(-r.pid(), syscall.SIGKILL)
			<-r.done
		}
	}
}

func (r *replicaProcess) pid() int { return r.cmd.Process.Pid }

func (r *replicaProcess) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func (r *replicaProcess) get(ctx context.Context, path string) (string, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.addr+path, nil)
	if err != nil {
		return "", 0, err
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), resp.StatusCode, err
}

// ringStatus is the part of /status.json the benchmark reads.
type ringStatus struct {
	Slots    int
	Members  []string
	Held     []int
	Assigned int
}

func (r *replicaProcess) status(ctx context.Context) (ringStatus, error) {
	var st ringStatus
	body, code, err := r.get(ctx, "/status.json")
	if err != nil {
		return st, err
	}
	if code != http.StatusOK {
		return st, fmt.Errorf("status.json: HTTP %d", code)
	}
	return st, json.Unmarshal([]byte(body), &st)
}

// metric reads one metric from the replica's /metrics, summed over its
// label sets.
func (r *replicaProcess) metric(ctx context.Context, name string) (float64, error) {
	body, code, err := r.get(ctx, "/metrics")
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("metrics: HTTP %d", code)
	}
	v, ok := metricValue(body, name)
	if !ok {
		return 0, fmt.Errorf("metrics: no %s", name)
	}
	return v, nil
}

// sampleHeap records the replica's Go heap in use every period until ctx
// is done; VmHWM gives the peak RSS, but only sampling gives the heap's.
func (r *replicaProcess) sampleHeap(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if v, err := r.metric(ctx, "go_memstats_heap_inuse_bytes"); err == nil {
			r.mu.Lock()
			if v > r.peakHeap {
				r.peakHeap, r.peakAt = v, time.Now()
			}
			r.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sampledPeakHeap returns the highest heap in use sampled, and when.
func (r *replicaProcess) sampledPeakHeap() (float64, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.peakHeap, r.peakAt
}

// waitRing waits until every replica is ready, sees all the others, and
// holds exactly the slots the assignment gives it, with every slot held.
func waitRing(ctx context.Context, replicas []*replicaProcess, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last string
	for {
		held, settled, slots := 0, true, 0
		for _, r := range replicas {
			if r.exited() {
				return fmt.Errorf("replica %s exited (log %s)", r.id, r.logPath)
			}
			_, code, err := r.get(ctx, "/readyz")
			if err != nil || code != http.StatusOK {
				settled, last = false, fmt.Sprintf("%s not ready (HTTP %d, %v)", r.id, code, err)
				continue
			}
			st, err := r.status(ctx)
			if err != nil {
				settled, last = false, fmt.Sprintf("%s: %v", r.id, err)
				continue
			}
			if len(st.Members) != len(replicas) || len(st.Held) != st.Assigned {
				settled = false
				last = fmt.Sprintf("%s sees %d members, holds %d of %d assigned slots", r.id, len(st.Members), len(st.Held), st.Assigned)
			}
			held, slots = held+len(st.Held), st.Slots
		}
		if settled && held == slots && slots > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ring not settled within %v: %s (%d of %d slots held)", limit, last, held, slots)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
