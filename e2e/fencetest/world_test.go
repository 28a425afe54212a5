package fencetest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/client-go/kubernetes"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/e2e/standin"
	"github.com/ringfire/ringfire/internal/faultproxy"
	"github.com/ringfire/ringfire/internal/localetcd"
)

// The ring of every test here: 256 slots, and a short lease so that a pause
// of a few seconds outlasts it.
const (
	prefix   = "/fencetest"
	slots    = 256
	leaseTTL = 2 * time.Second
	ns       = "default"
)

// keepEnv names an environment variable: set to a directory, the control
// plane's state (audit log included) and the replicas' logs stay there for a
// look afterwards; else they go with the test.
const keepEnv = "RINGFIRE_FENCE_DIR"

// world is one test's setting: a control plane with its audit log on, the
// Volcano CRDs, the scheduler stand-in, a ring etcd with an ownership
// observer, and ringfire replicas as processes.
type world struct {
	cluster  *cluster.Cluster
	kube     kubernetes.Interface
	volcano  vcclient.Interface
	owners   *ownership
	replicas []*procs.Replica
	// proxies are the fault proxies between the replicas that asked for
	// one (replicaOptions.Proxied) and the ring's etcd, by replica id.
	proxies map[string]*faultproxy.Proxy
}

// replicaOptions are what differs between the replicas of a world.
type replicaOptions struct {
	// QPS is the replica's --kube-api-qps and --kube-api-burst; 0 for
	// ringfire's defaults.
	QPS int
	// Proxied puts a fault proxy of its own between the replica and the
	// ring's etcd (world.proxies), to partition it from the ring.
	Proxied bool
	// Env is added to the replica's environment (procs.Args.Env).
	Env []string
}

// startWorld brings a world up with one replica of bin per entry of
// replicas, named r0, r1, ..., and returns once they share the ring as
// assigned.
func startWorld(t *testing.T, bin string, replicas []replicaOptions) *world {
	t.Helper()
	logDir, clusterDir := dirs(t)
	log := hclog.New(&hclog.LoggerOptions{Name: "fencetest", Level: hclog.Warn, Output: os.Stderr})
	cl := cluster.StartForTest(t, cluster.Options{
		Nodes: 6, Dir: clusterDir, AuditLog: true, Logger: log.Named("cluster"),
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	installCtx, installed := context.WithTimeout(ctx, time.Minute)
	defer installed()
	if err := crds.Install(installCtx, cl.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	// The test's own clients: the load, the watch and the stand-in must not
	// be paced by a client-side limiter.
	cfg := cl.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 1000
	w := &world{
		cluster: cl, kube: kubernetes.NewForConfigOrDie(cfg), volcano: vcclient.NewForConfigOrDie(cfg),
		proxies: map[string]*faultproxy.Proxy{},
	}
	standinDone := make(chan struct{})
	go func() {
		defer close(standinDone)
		standin.Run(ctx, w.kube, w.volcano, cl.NodeNames())
	}()
	t.Cleanup(func() { cancel(); <-standinDone })

	ring := localetcd.StartForTest(t)
	w.owners = observeOwnership(t, localetcd.ClientForTest(t, ring.Endpoint()), prefix)
	// The proxies close after the replicas have stopped (cleanups run
	// last first), so that a replica leaving the ring can reach etcd.
	for i, o := range replicas {
		if !o.Proxied {
			continue
		}
		proxy, err := faultproxy.New(strings.TrimPrefix(ring.Endpoint(), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(proxy.Close)
		w.proxies[fmt.Sprintf("r%d", i)] = proxy
	}
	args := procs.Args{
		Bin: bin, Etcd: ring.Endpoint(), Prefix: prefix, Kubeconfig: cl.Kubeconfig(), LogDir: logDir,
		Slots: slots, LeaseTTL: leaseTTL,
	}
	t.Cleanup(func() {
		procs.StopAll(t, w.replicas)
		if t.Failed() {
			for _, r := range w.replicas { // to stderr, ahead of the failures (see cluster.StartForTest)
				fmt.Fprintf(os.Stderr, "=== %s failed: replica %s log tail:\n%s\n", t.Name(), r.ID, r.LogTail(40))
			}
		}
	})
	for i, o := range replicas {
		id := fmt.Sprintf("r%d", i)
		a := args
		a.QPS, a.Burst, a.Env = o.QPS, o.QPS, o.Env
		if proxy := w.proxies[id]; proxy != nil {
			a.Etcd = "http://" + proxy.Addr()
		}
		w.replicas = append(w.replicas, procs.Start(t, a, id))
	}
	if err := procs.WaitRing(ctx, w.replicas, time.Minute); err != nil {
		t.Fatal(err)
	}
	return w
}

// stopAndAudit stops the replicas, so that every write they made is in the
// audit log, and returns the slots' tenures as the observer saw them and
// the audit log's record.
func (w *world) stopAndAudit(t *testing.T) (map[int][]tenure, auditRecord) {
	t.Helper()
	procs.StopAll(t, w.replicas)
	tenures, err := w.owners.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	rec, err := readAudit(w.cluster.AuditLogPath(), slots)
	if err != nil {
		t.Fatal(err)
	}
	return tenures, rec
}

// replica returns the replica named id.
func (w *world) replica(t *testing.T, id string) *procs.Replica {
	t.Helper()
	for _, r := range w.replicas {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no replica %s", id)
	return nil
}

// dirs returns where the replicas log and where the control plane keeps its state.
func dirs(t *testing.T) (logDir, clusterDir string) { return procs.Dirs(t, keepEnv) }
