package robusttest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/deploy"
	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/internal/localetcd"
)

// The ring of the suite: 256 slots and the default lease, so that the
// replicas run as deployed ones do.
const (
	prefix   = "/robusttest"
	slots    = 256
	replicas = 3
	// controllers are all of ringfire's, the gang scheduler included.
	controllers = "job,queue,podgroup,cronjob,jobflow,batchjob,scheduler"
)

// keepEnv names an environment variable: set to a directory, the control
// plane's state and the replicas' logs stay there for a look afterwards.
const keepEnv = "RINGFIRE_ROBUST_DIR"

// Case is one case of the suite: its subtest's name and what it runs on the
// shared world. A case works in namespaces of its own (world.namespace) and
// must not get in the way of the others, which run beside it.
type Case struct {
	Name string
	Run  func(t *testing.T, w *world)
}

var (
	casesMu sync.Mutex
	cases   []Case
)

// register adds a case to the suite; call it from an init of the case's file.
func register(c Case) {
	casesMu.Lock()
	defer casesMu.Unlock()
	cases = append(cases, c)
}

// world is the suite's setting: the control plane, the ring's etcd and the
// replicas, each in a memory cgroup of its own.
type world struct {
	cluster  *cluster.Cluster
	kube     kubernetes.Interface
	volcano  vcclient.Interface
	ring     *localetcd.Server
	args     procs.Args
	replicas []*procs.Replica
	memcgs   map[string]*memcg // by replica id; empty where the machine has no cgroup to make
}

// TestRobustness starts the world, runs every registered case side by side,
// and then audits the replicas.
func TestRobustness(t *testing.T) {
	cluster.RequireTools(t)
	w := startWorld(t)
	start := time.Now()
	casesMu.Lock()
	all := slices.Clone(cases)
	casesMu.Unlock()
	slices.SortFunc(all, func(a, b Case) int { return strings.Compare(a.Name, b.Name) })
	t.Run("cases", func(t *testing.T) {
		for _, c := range all {
			t.Run(c.Name, func(t *testing.T) {
				t.Parallel()
				c.Run(t, w)
			})
		}
	})
	t.Logf("%d cases ran side by side in %v", len(all), time.Since(start).Round(time.Second))
	w.audit(t)
}

// startWorld brings the world up and returns once the replicas share the
// ring as assigned.
func startWorld(t *testing.T) *world {
	t.Helper()
	logDir, clusterDir := dirs(t)
	log := hclog.New(&hclog.LoggerOptions{Name: "robusttest", Level: hclog.Warn, Output: os.Stderr})
	cl := cluster.StartForTest(t, cluster.Options{
		Nodes: 6, Dir: clusterDir, Logger: log.Named("cluster"), KubeScheduler: true,
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	setup, done := context.WithTimeout(ctx, 2*time.Minute)
	defer done()
	if err := crds.Install(setup, cl.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	// The replicas run as a deployed one does: as ringfire's ServiceAccount,
	// with only the permissions of deploy/ringfire/10-rbac.yaml.
	if err := deploy.InstallRBAC(setup, cl.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	kubeconfigPath := procs.ServiceAccountKubeconfig(t, cl.RESTConfig(), logDir)
	// The test's own clients are not paced by a client-side limiter.
	cfg := cl.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 1000
	w := &world{
		cluster: cl, kube: kubernetes.NewForConfigOrDie(cfg), volcano: vcclient.NewForConfigOrDie(cfg),
		ring: localetcd.StartForTest(t), memcgs: map[string]*memcg{},
	}
	w.args = procs.Args{
		Bin: procs.Build(t), Etcd: w.ring.Endpoint(), Prefix: prefix, Kubeconfig: kubeconfigPath,
		LogDir: logDir, Controllers: controllers, Slots: slots,
	}
	t.Cleanup(func() {
		procs.StopAll(t, w.replicas)
		for _, m := range w.memcgs {
			m.remove()
		}
		if t.Failed() {
			for _, r := range w.replicas { // to stderr, ahead of the failures (see cluster.StartForTest)
				fmt.Fprintf(os.Stderr, "=== %s failed: replica %s log tail:\n%s\n", t.Name(), r.ID, r.LogTail(60))
			}
		}
	})
	for i := range replicas {
		w.replicas = append(w.replicas, w.startReplica(t, fmt.Sprintf("r%d", i), logDir))
	}
	if err := procs.WaitRing(ctx, w.replicas, time.Minute); err != nil {
		t.Fatal(err)
	}
	return w
}

// startReplica starts replica id in a memory cgroup of its own with the
// StatefulSet's limit. A machine where the suite cannot make one (not root,
// no memory controller) runs the replica unlimited and says so; the audit
// then compares each replica's peak resident memory with the limit instead.
func (w *world) startReplica(t *testing.T, id, dir string) *procs.Replica {
	t.Helper()
	a := w.args
	m, err := newMemcg(fmt.Sprintf("%d-%s", os.Getpid(), id), replicaMemoryLimit)
	if err != nil {
		t.Logf("replica %s runs without a memory cgroup: %v", id, err)
		return procs.Start(t, a, id)
	}
	w.memcgs[id] = m
	if a.Bin, err = m.wrapper(dir, a.Bin); err != nil {
		t.Fatal(err)
	}
	return procs.Start(t, a, id)
}

// audit checks what every case relies on: no replica died (an OOM kill, a
// crash) and none went past its memory limit; it logs each one's peak.
func (w *world) audit(t *testing.T) {
	t.Helper()
	for _, r := range w.replicas {
		if r.Exited() {
			t.Errorf("replica %s exited during the suite; its log ends:\n%s", r.ID, r.LogTail(40))
		}
		hwm := peakRSS(r.PID())
		m := w.memcgs[r.ID]
		if m == nil {
			if hwm > replicaMemoryLimit {
				t.Errorf("replica %s peaked at %d MiB resident, past the StatefulSet's limit of %d MiB", r.ID, hwm>>20, replicaMemoryLimit>>20)
			}
			t.Logf("replica %s: peak resident memory %d MiB (no cgroup)", r.ID, hwm>>20)
			continue
		}
		peak, err := m.peak()
		if err != nil {
			t.Errorf("replica %s: read its cgroup's peak: %v", r.ID, err)
		}
		kills, err := m.oomKills()
		if err != nil {
			t.Logf("replica %s: read its cgroup's OOM kills: %v", r.ID, err)
		}
		if kills > 0 {
			t.Errorf("replica %s: %d processes OOM-killed in its cgroup (limit %d MiB)", r.ID, kills, replicaMemoryLimit>>20)
		}
		t.Logf("replica %s: cgroup peak %d MiB of %d MiB, peak resident %d MiB, OOM kills %d", r.ID, peak>>20, replicaMemoryLimit>>20, hwm>>20, kills)
	}
}

// peakRSS is a live process's peak resident memory (VmHWM), in bytes, or 0.
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// namespace makes a namespace named for the case (prefix-<n>) and returns its
// name; it goes with the test.
func (w *world) namespace(t *testing.T, prefix string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns, err := w.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s-*: %v", prefix, err)
	}
	return ns.Name
}

// dirs returns where the replicas log and where the control plane keeps its
// state ("" for a temporary directory of the harness's).
func dirs(t *testing.T) (logDir, clusterDir string) {
	keep := os.Getenv(keepEnv)
	if keep == "" {
		return t.TempDir(), ""
	}
	logDir = filepath.Join(keep, t.Name())
	clusterDir = filepath.Join(logDir, "cluster")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return logDir, clusterDir
}
