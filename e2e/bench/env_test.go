package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/e2e/standin"
	"github.com/ringfire/ringfire/internal/localetcd"
)

// env is one benchmark's world: a fresh control plane, a ring etcd, the
// ringfire replica processes, and the stand-in scheduler when ringfire's
// own does not run.
type env struct {
	cluster  *cluster.Cluster
	kube     kubernetes.Interface // the load generator's clients, not rate limited in practice
	volcano  vcclient.Interface
	replicas []*replicaProcess
	logDir   string // the replicas' logs
	// clients count the writes of the benchmark process's own clients, by
	// name ("load", "standin"), to tell them from ringfire's.
	clients map[string]*clientCounter
}

// controllers are the replicas' --controllers with each scheduler: the
// gang scheduler, or none beside the stand-in. No cronjob: the load has
// none, and the benchmark counts what runs.
var controllers = map[string]string{
	schedulerRingfire: "job,queue,podgroup,scheduler",
	schedulerStandIn:  "job,queue,podgroup",
}

// startEnv brings an env up and tears it down when b ends.
func startEnv(b *testing.B, c config, bin, scheduler string, replicas int) *env {
	b.Helper()
	level := hclog.Warn
	if os.Getenv("RINGFIRE_E2E_DEBUG") != "" {
		level = hclog.Debug
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "bench", Level: level, Output: os.Stderr})
	logDir, clusterDir := dirs(b, c)
	cl := cluster.StartForTest(b, cluster.Options{
		Nodes: c.nodes, NodePods: strconv.Itoa(c.nodePods), Dir: clusterDir, Logger: log.Named("cluster"),
	})
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	installCtx, installDone := context.WithTimeout(ctx, time.Minute)
	defer installDone()
	if err := crds.Install(installCtx, cl.RESTConfig()); err != nil {
		b.Fatal(err)
	}

	// The load generator and the stand-in get clients of their own with a
	// limiter far above what the API server serves here, so that neither
	// Job creation nor PodGroup admission is paced by the test's client.
	// Each counts its writes, which the API server counts too.
	e := &env{cluster: cl, logDir: logDir, clients: map[string]*clientCounter{"load": newClientCounter()}}
	cfg := counted(cl.RESTConfig(), e.clients["load"])
	e.kube, e.volcano = kubernetes.NewForConfigOrDie(cfg), vcclient.NewForConfigOrDie(cfg)
	if scheduler == schedulerStandIn {
		e.clients["standin"] = newClientCounter()
		cfg := counted(cl.RESTConfig(), e.clients["standin"])
		standinDone := make(chan struct{})
		go func() {
			defer close(standinDone)
			standin.Run(ctx, kubernetes.NewForConfigOrDie(cfg), vcclient.NewForConfigOrDie(cfg), cl.NodeNames())
		}()
		b.Cleanup(func() { cancel(); <-standinDone })
	}

	ring := localetcd.StartForTest(b)
	args := procs.Args{
		Bin: bin, Etcd: ring.Endpoint(), Kubeconfig: cl.Kubeconfig(), LogDir: e.logDir,
		LogLevel: c.logLevel, QPS: c.qps, Burst: c.burst, Workers: c.workers,
		Controllers: controllers[scheduler], Extra: c.replicaArgs,
	}
	b.Cleanup(func() {
		procs.StopAll(b, processes(e.replicas))
		if b.Failed() {
			for _, r := range e.replicas {
				b.Logf("replica %s log tail:\n%s", r.ID, r.LogTail(30))
			}
		}
	})
	for i := range replicas {
		e.replicas = append(e.replicas, &replicaProcess{Replica: procs.Start(b, args, fmt.Sprintf("r%d", i))})
	}
	if err := procs.WaitRing(ctx, processes(e.replicas), time.Minute); err != nil {
		b.Fatal(err)
	}
	return e
}

// counted returns cfg with a limiter far above what the API server serves
// here and its writes counted by counter.
func counted(cfg *rest.Config, counter *clientCounter) *rest.Config {
	cfg.QPS, cfg.Burst = 5000, 5000
	cfg.Wrap(counter.wrap)
	return cfg
}

// dirs returns where the replicas log and the control plane keeps its state
// ("" for a temporary directory). With RINGFIRE_BENCH_LOGS both stay there,
// per sub-benchmark, for a look afterwards; else they go with b.
func dirs(b *testing.B, c config) (logDir, clusterDir string) {
	if c.logDir == "" {
		return b.TempDir(), ""
	}
	logDir = filepath.Join(c.logDir, strings.NewReplacer("/", "_", "=", "-").Replace(b.Name()))
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		b.Fatal(err)
	}
	return logDir, filepath.Join(logDir, "cluster")
}

// components are the processes whose CPU time a run accounts for, by name:
// the control plane's (from the pid files the harness keeps), the replicas,
// and the benchmark process itself (load generator, pod watch, stand-in,
// ring etcd).
func (e *env) components() map[string]int {
	pids := map[string]int{"bench-process": os.Getpid()}
	for _, name := range []cluster.Component{cluster.APIServer, cluster.Etcd, cluster.ControllerManager, cluster.KWOK} {
		if pid, err := readPIDFile(filepath.Join(e.cluster.Dir(), string(name)+".pid")); err == nil {
			pids[string(name)] = pid
		}
	}
	for _, r := range e.replicas {
		pids[r.ID] = r.PID()
	}
	return pids
}

// cpuSeconds reads the CPU time of every component; unreadable ones are
// left out.
func cpuSeconds(pids map[string]int) map[string]float64 {
	out := map[string]float64{}
	for name, pid := range pids {
		if u, err := readProc(pid); err == nil {
			out[name] = u.cpuSeconds
		}
	}
	return out
}
