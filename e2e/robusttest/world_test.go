package robusttest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/client-go/kubernetes"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/deploy"
	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/memcg"
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

// replicaMemoryLimit is the memory limit of deploy/ringfire's StatefulSet,
// which each replica here runs under.
const replicaMemoryLimit = 2 << 30

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
// replicas, each in a memory cgroup of its own (e2e/memcg).
type world struct {
	cluster *cluster.Cluster
	kube    kubernetes.Interface
	volcano vcclient.Interface
	ring    *localetcd.Server
	fleet   *memcg.Fleet // the replicas, each in a memory cgroup of its own
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
		ring: localetcd.StartForTest(t),
	}
	w.fleet = memcg.NewFleet(t, procs.Args{
		Bin: procs.Build(t), Etcd: w.ring.Endpoint(), Prefix: prefix, Kubeconfig: kubeconfigPath,
		LogDir: logDir, Controllers: controllers, Slots: slots,
	}, replicaMemoryLimit, "robusttest")
	for i := range replicas {
		w.fleet.Start(t, fmt.Sprintf("r%d", i))
	}
	if err := procs.WaitRing(ctx, w.fleet.Replicas(), time.Minute); err != nil {
		t.Fatal(err)
	}
	return w
}

// audit checks what every case relies on: no replica died (an OOM kill, a
// crash) and none went past its memory limit; it logs each one's peak.
func (w *world) audit(t *testing.T) { w.fleet.Audit(t, replicaMemoryLimit) }

// dirs returns where the replicas log and where the control plane keeps its state.
func dirs(t *testing.T) (logDir, clusterDir string) { return procs.Dirs(t, keepEnv) }
