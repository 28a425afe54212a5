package adversarytest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/deploy"
	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/memcg"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/e2e/vcjob"
	"github.com/ringfire/ringfire/e2e/volcano"
	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/shard"
)

// The ring of the suite: 256 slots and the default lease, so that the
// replicas run as deployed ones do.
const (
	prefix   = "/adversarytest"
	slots    = 256
	replicas = 3
	// controllers are all of ringfire's, the gang scheduler included.
	controllers = "job,queue,podgroup,cronjob,jobflow,batchjob,scheduler"
	// replicaMemoryLimit is the memory limit of deploy/ringfire's
	// StatefulSet, which each replica here runs under.
	replicaMemoryLimit = 2 << 30
)

// keepEnv names an environment variable: set to a directory, each world's
// control plane state and replicas' logs stay there for a look afterwards.
const keepEnv = "RINGFIRE_ADVERSARY_DIR"

// flavor is how a world's API is served: by ringfire's CRDs with its
// admission policies, or by Volcano's own CRDs with no ringfire policy (a
// cluster switched from Volcano that kept them, docs/migration.md).
type flavor struct {
	name     string
	policies bool
	install  func(t *testing.T, ctx context.Context, cfg *rest.Config)
}

var (
	ringfireCRDs = flavor{name: "ringfire-crds", policies: true, install: func(t *testing.T, ctx context.Context, cfg *rest.Config) {
		if err := crds.Install(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}}
	volcanoCRDs = flavor{name: "volcano-crds", install: installVolcanoCRDs}
)

// installVolcanoCRDs installs Volcano's CRDs as its Helm chart leaves them,
// and the root and default Queues its scheduler would make: nothing of
// ringfire's but its RBAC.
func installVolcanoCRDs(t *testing.T, ctx context.Context, cfg *rest.Config) {
	if _, err := volcano.InstallCRDsAsHelm(ctx, cfg, volcano.CRDs(t)); err != nil {
		t.Fatal(err)
	}
	vc := vcclient.NewForConfigOrDie(cfg)
	for _, name := range []string{"root", "default"} {
		q := &scheduling.Queue{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       scheduling.QueueSpec{Weight: 1, Reclaimable: ptrTo(name == "default")},
		}
		if _, err := vc.SchedulingV1beta1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create Queue %s: %v", name, err)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// world is one setting of the suite: a control plane, the ring's etcd and
// the replicas, each in a memory cgroup of its own.
type world struct {
	flavor  flavor
	cluster *cluster.Cluster
	admin   *rest.Config
	kube    kubernetes.Interface
	volcano vcclient.Interface
	tenant  *tenant
	ring    *clientv3.Client
	fleet   *memcg.Fleet

	mu       sync.Mutex
	loadFrom time.Time        // when the load began
	attacked map[int][]string // slot → the attacks that aimed at it
	kills    []kill
}

// kill is a deliberate kill of a replica: when, the slots it held, and when
// the ring had settled again after its restart.
type kill struct {
	id       string
	at, back time.Time
	held     map[int]bool
}

// startWorld brings a world of the flavor up and returns once the replicas
// share the ring as assigned.
func startWorld(t *testing.T, bin string, f flavor) *world {
	t.Helper()
	logDir, clusterDir := dirs(t)
	log := hclog.New(&hclog.LoggerOptions{Name: "adversarytest", Level: hclog.Warn, Output: os.Stderr})
	cl := cluster.StartForTest(t, cluster.Options{Nodes: 6, Dir: clusterDir, Logger: log.Named("cluster")})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f.install(t, ctx, cl.RESTConfig())
	// The replicas run as a deployed one does: as ringfire's ServiceAccount,
	// with only the permissions of deploy/ringfire/10-rbac.yaml.
	if err := deploy.InstallRBAC(ctx, cl.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	kubeconfigPath := procs.ServiceAccountKubeconfig(t, cl.RESTConfig(), logDir)
	// The test's own clients are not paced by a client-side limiter.
	cfg := cl.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 1000
	ring := localetcd.StartForTest(t)
	w := &world{
		flavor: f, cluster: cl, admin: cfg,
		kube: kubernetes.NewForConfigOrDie(cfg), volcano: vcclient.NewForConfigOrDie(cfg),
		ring: localetcd.ClientForTest(t, ring.Endpoint()), attacked: map[int][]string{},
	}
	w.tenant = newTenant(cfg)
	w.fleet = memcg.NewFleet(t, procs.Args{
		Bin: bin, Etcd: ring.Endpoint(), Prefix: prefix, Kubeconfig: kubeconfigPath,
		LogDir: logDir, Controllers: controllers, Slots: slots,
	}, replicaMemoryLimit, strings.ReplaceAll(f.name, "-", ""))
	for i := range replicas {
		w.fleet.Start(t, fmt.Sprintf("r%d", i))
	}
	if err := procs.WaitRing(ctx, w.fleet.Replicas(), time.Minute); err != nil {
		t.Fatal(err)
	}
	return w
}

// aim records that attack aimed at the slots of keys ("namespace/name"):
// the probe runs a Job on each.
func (w *world) aim(attack string, keys ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range keys {
		s := shard.SlotOf(k, slots)
		if !slices.Contains(w.attacked[s], attack) {
			w.attacked[s] = append(w.attacked[s], attack)
		}
	}
}

// attackedSlots are the slots some attack aimed at, in order.
func (w *world) attackedSlots() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	var s []int
	for n := range w.attacked {
		s = append(s, n)
	}
	sort.Ints(s)
	return s
}

// holders reads from the ring's etcd which replica holds each slot.
func (w *world) holders(t testing.TB) map[int]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := w.ring.Get(ctx, shard.SlotsPrefix(prefix), clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("read the ring's slots: %v", err)
	}
	out := map[int]string{}
	for _, kv := range resp.Kvs {
		var n int
		if _, err := fmt.Sscanf(strings.TrimPrefix(string(kv.Key), shard.SlotsPrefix(prefix)), "%d", &n); err == nil {
			out[n] = string(kv.Value)
		}
	}
	return out
}

// sinceLoad is how long the load has run, for the logs to be read
// against its timeline.
func (w *world) sinceLoad() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Since(w.loadFrom).Round(time.Second)
}

// waitFor polls cond every 100 ms until it holds and fails the test after
// limit with what cond last saw, or at once when a replica has exited that
// no one killed: its log tail says why.
func (w *world) waitFor(t testing.TB, what string, limit time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		w.requireAlive(t, what)
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s; last seen: %s", limit, what, saw)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// requireAlive fails the test if a replica has exited that no one killed.
func (w *world) requireAlive(t testing.TB, during string) {
	t.Helper()
	if down := w.fleet.Down(); len(down) > 0 {
		var tails []string
		for _, id := range down {
			tails = append(tails, fmt.Sprintf("replica %s's log ends:\n%s", id, w.fleet.Replica(id).LogTail(25)))
		}
		t.Fatalf("replicas %v exited while %s:\n%s", down, during, strings.Join(tails, "\n"))
	}
}

// namespace makes a namespace named for the attack (prefix-<n>), in which
// the tenant may do what a namespace's editor does; it goes with the test.
func (w *world) namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := vcjob.Namespace(t, w.kube, prefix)
	w.tenant.grant(t, w.kube, ns)
	return ns
}

// dirs returns where the replicas log and where the control plane keeps its state.
func dirs(t *testing.T) (logDir, clusterDir string) { return procs.Dirs(t, keepEnv) }
