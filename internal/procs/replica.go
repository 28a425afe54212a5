package procs

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ringfire/ringfire/internal/freeport"
)

// Args are the flags every replica of a run shares. A zero field leaves the
// flag at ringfire's default.
type Args struct {
	Bin        string // the ringfire binary (e2e/procs.Build in tests; dev runs its own executable)
	Etcd       string // --etcd-endpoints of the ring
	Prefix     string // --etcd-prefix
	Kubeconfig string // --kubeconfig
	LogDir     string // each replica logs to <LogDir>/<id>.log
	LogLevel   string // --log-level
	// Controllers is --controllers; empty for "job,queue,podgroup,cronjob,jobflow,batchjob", which
	// leaves admission and binding to a stand-in (e2e/standin). `ringfire dev`
	// adds the gang scheduler.
	Controllers string
	Slots       int           // --slots of a new ring
	LeaseTTL    time.Duration // --lease-ttl
	QPS, Burst  int           // --kube-api-qps, --kube-api-burst
	Workers     int           // --workers
	// Extra flags, appended as given (say, --status-coalesce 5s).
	Extra []string
	// Env is added to the environment the replica inherits, KEY=VALUE each
	// (say, a test-only hook of docs/e2e.md).
	Env []string
	// MetricsSecure runs the replicas with --metrics-secure: their metrics
	// address serves HTTPS (a self-signed certificate, which Get does not
	// check) to callers with a token the API server allows; Get sends
	// MetricsToken. Off, it serves plain HTTP to anyone, as `ringfire dev`'s
	// replicas do on the loopback.
	MetricsSecure bool
	MetricsToken  string
}

// command returns the command line of replica id serving on addrs.
func (a Args) command(id string, addrs Addrs) []string {
	controllers := a.Controllers
	if controllers == "" {
		controllers = "job,queue,podgroup,cronjob,jobflow,batchjob"
	}
	argv := []string{"run", "--id", id, "--etcd-endpoints", a.Etcd, "--kubeconfig", a.Kubeconfig,
		"--metrics-bind-address", addrs.Metrics, "--health-probe-bind-address", addrs.Health,
		"--controllers", controllers}
	optional := []struct {
		flag string
		set  bool
		val  string
	}{
		{"--etcd-prefix", a.Prefix != "", a.Prefix},
		{"--log-level", a.LogLevel != "", a.LogLevel},
		{"--slots", a.Slots != 0, strconv.Itoa(a.Slots)},
		{"--lease-ttl", a.LeaseTTL != 0, a.LeaseTTL.String()},
		{"--kube-api-qps", a.QPS != 0, strconv.Itoa(a.QPS)},
		{"--kube-api-burst", a.Burst != 0, strconv.Itoa(a.Burst)},
		{"--workers", a.Workers != 0, strconv.Itoa(a.Workers)},
		{"--pprof-bind-address", addrs.Pprof != "", addrs.Pprof},
	}
	for _, o := range optional {
		if o.set {
			argv = append(argv, o.flag, o.val)
		}
	}
	if a.MetricsSecure {
		argv = append(argv, "--metrics-secure") // a bool flag takes no separate value
	}
	return append(argv, a.Extra...)
}

// Addrs are the addresses a replica serves on (`ringfire run`'s
// --metrics-bind-address, --health-probe-bind-address, --pprof-bind-address).
type Addrs struct {
	Metrics string // /metrics, the status page, /status.json; "" for a free port of 127.0.0.1
	Health  string // /healthz, /readyz; "" for a free port of 127.0.0.1
	Pprof   string // /debug/pprof/; "" for none
}

// Replica is one `ringfire run` process.
type Replica struct {
	ID      string
	Addrs   Addrs
	LogPath string

	cmd  *exec.Cmd
	done chan struct{} // closed once the process is reaped
	http *http.Client
	// metricsScheme is how the metrics address is reached (http, or https
	// with --metrics-secure), and metricsToken the bearer token sent there.
	metricsScheme, metricsToken string
}

// Start starts replica id serving on addrs, a free port of 127.0.0.1 for
// each of the metrics and health addresses left empty. It runs in a process
// group of its own, so that a signal to it reaches nothing else, and dies
// with the process that started it (Pdeathsig). Stop it with StopAll.
func Start(a Args, id string, addrs Addrs) (*Replica, error) {
	for _, addr := range []*string{&addrs.Metrics, &addrs.Health} {
		if *addr != "" {
			continue
		}
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		*addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	r := &Replica{
		ID: id, Addrs: addrs,
		LogPath: filepath.Join(a.LogDir, id+".log"), done: make(chan struct{}),
		http: &http.Client{Timeout: 5 * time.Second}, metricsScheme: "http",
	}
	if a.MetricsSecure {
		// The replica's certificate is self-signed, made at its start: there
		// is no CA to check it against.
		r.http.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
		r.metricsScheme, r.metricsToken = "https", a.MetricsToken
	}
	// A replica started again under the same id writes after its earlier
	// run's log, which tells how that run ended (a kill -9 leaves no last
	// words, but its last lines are what it was doing).
	logFile, err := os.OpenFile(r.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	r.cmd = exec.Command(a.Bin, a.command(id, addrs)...)
	if len(a.Env) > 0 {
		r.cmd.Env = append(os.Environ(), a.Env...)
	}
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start replica %s: %w", id, err)
	}
	go func() {
		_ = r.cmd.Wait()
		logFile.Close()
		close(r.done)
	}()
	return r, nil
}

// StopAll asks every replica to leave the ring at once (one by one, each
// leave would hand its slots to the others, which would list their pods),
// continues any that is paused, and kills the process group of any that has
// not exited within grace. The error names each replica it had to kill.
func StopAll(replicas []*Replica, grace time.Duration) error {
	for _, r := range replicas {
		_ = r.Signal(syscall.SIGTERM)
		_ = r.Signal(syscall.SIGCONT)
	}
	deadline := time.Now().Add(grace)
	var errs []error
	for _, r := range replicas {
		select {
		case <-r.done:
		case <-time.After(time.Until(deadline)):
			errs = append(errs, fmt.Errorf("replica %s ignored SIGTERM for %v; killed it (log %s)", r.ID, grace, r.LogPath))
			_ = r.Signal(syscall.SIGKILL)
			<-r.done
		}
	}
	return errors.Join(errs...)
}

// PID is the replica's process id.
func (r *Replica) PID() int { return r.cmd.Process.Pid }

// Signal sends sig to the replica's process group.
func (r *Replica) Signal(sig syscall.Signal) error {
	if r.Exited() {
		return fmt.Errorf("replica %s has exited", r.ID)
	}
	return syscall.Kill(-r.PID(), sig)
}

// Exited reports whether the process has ended.
func (r *Replica) Exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// Get fetches path from the replica: the probes (/healthz, /readyz) from its
// health address, profiles from its pprof address, anything else from its
// metrics address.
func (r *Replica) Get(ctx context.Context, path string) (string, int, error) {
	addr, scheme, token := r.Addrs.Metrics, r.metricsScheme, r.metricsToken
	switch {
	case path == "/healthz" || path == "/readyz":
		addr, scheme, token = r.Addrs.Health, "http", ""
	case strings.HasPrefix(path, "/debug/pprof/"):
		addr, scheme, token = r.Addrs.Pprof, "http", ""
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+path, nil)
	if err != nil {
		return "", 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), resp.StatusCode, err
}

// Status is the part of the replica's /status.json tests read.
type Status struct {
	Slots    int
	Members  []string
	Held     []int
	Assigned int
}

// Status reads the replica's view of the ring.
func (r *Replica) Status(ctx context.Context) (Status, error) {
	var st Status
	body, code, err := r.Get(ctx, "/status.json")
	if err != nil {
		return st, err
	}
	if code != http.StatusOK {
		return st, fmt.Errorf("status.json: HTTP %d", code)
	}
	return st, json.Unmarshal([]byte(body), &st)
}

// Metric reads one metric from the replica's /metrics, summed over its
// label sets.
func (r *Replica) Metric(ctx context.Context, name string) (float64, error) {
	body, code, err := r.Get(ctx, "/metrics")
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("metrics: HTTP %d", code)
	}
	v, ok := MetricValue(body, name)
	if !ok {
		return 0, fmt.Errorf("metrics: no %s", name)
	}
	return v, nil
}

// LogTail returns the last n lines of the replica's log.
func (r *Replica) LogTail(n int) string { return Tail(r.LogPath, n) }

// Tail returns the last n lines of a file, or the error reading it.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago and
// that this process has not handed out before (freeport.Pick).
func FreePort() (int, error) { return freeport.Pick() }
