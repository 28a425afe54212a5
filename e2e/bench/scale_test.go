package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/e2e/standin"
	"github.com/ringfire/ringfire/e2e/volcano"
	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/shard"
)

// BenchmarkScale holds a large resident set of Jobs whose pods keep running
// and measures controller managers under it, one after the other on one
// control plane, one sub-benchmark per system of RINGFIRE_SCALE_SYSTEMS:
//
//  0. resident: the first system creates RINGFIRE_SCALE_JOBS (10,000) Jobs ×
//     RINGFIRE_SCALE_TASK_PODS (10) pods that outlive the run at RINGFIRE_SCALE_RATE
//     (12) Jobs/s: the time until the last pod exists. Every later system
//     starts on that set, as a controller manager restarted or swapped on a
//     busy cluster does;
//  1. start: Jobs created as the system starts, on every part of the key
//     space: the time until all their pods exist (the initial lists of the
//     whole set, then work);
//  2. steady: RINGFIRE_SCALE_STEADY_RATE (5) Jobs/s of 1-s pods through the
//     resident set for RINGFIRE_SCALE_STEADY_FOR (6m): create → all pods p50
//     and p99 per 5-s window, RSS per process, CPU-s per 1,000 Jobs. A
//     system that started on the set (every one but the first) first
//     settles for RINGFIRE_SCALE_SETTLE (30s): its first collections over a
//     heap of the whole set, and the work of its start, are not the steady
//     state;
//  3. failover (ringfire, 2 replicas or more): kill -9 of one replica, and
//     Jobs created at once on its slots: the time until its slots are held
//     again and until those Jobs have all their pods;
//  4. restart: the killed replica (or Volcano's controller manager, or the
//     one replica) started again: the time until it runs Jobs created on
//     what it holds.
//
// With 2 replicas or more, 3 and 4 run RINGFIRE_SCALE_FAILOVERS (3) times,
// each on another replica: what else the machine does in the seconds after
// one kill (kube-apiserver's periodic check of its watch cache against etcd,
// a collection of its heap or KWOK's) moves one failover by a second or
// more, so each is reported, and the median.
//
// Then the system stops and its steady and probe namespaces are deleted, so
// that each system sees the same resident set.
//
// Systems: ringfire-N (N replicas at their defaults; ringfire-N+json with
// --kube-api-content-type json; ringfire-N+paced with --pod-list-rate
// RINGFIRE_SCALE_PACE; ringfire-N+soak adds the soak after the faults),
// volcano
// (vc-controller-manager's job, queue and PodGroup controllers at their
// defaults) and volcano-tuned (50 workers, QPS 1,000). The same in-process
// stand-in (e2e/standin) admits PodGroups and binds pods for every system,
// so that what is compared is the controller manager, and the replicas'
// memory is theirs alone. Not part of CI: `make bench-scale`.
func BenchmarkScale(b *testing.B) {
	cluster.RequireTools(b)
	quietClientGo()
	sc := scaleConfigFromEnv(b)
	bin := procs.Build(b)
	b.Logf("%s; %d CPUs", sc, runtime.NumCPU())
	w := startScaleWorld(b, sc)
	for i, sys := range sc.systems {
		b.Run(sys, func(b *testing.B) { benchScale(b, w, bin, sys, i) })
	}
}

// scaleConfig is BenchmarkScale's configuration, from the environment.
type scaleConfig struct {
	systems    []string      // RINGFIRE_SCALE_SYSTEMS ("ringfire-3,ringfire-1,ringfire-6,volcano,volcano-tuned")
	jobs       int           // RINGFIRE_SCALE_JOBS: resident Jobs (10000)
	taskPods   int           // RINGFIRE_SCALE_TASK_PODS: pods per Job (10)
	rate       int           // RINGFIRE_SCALE_RATE: resident Jobs created per second (12)
	steadyRate int           // RINGFIRE_SCALE_STEADY_RATE: short Jobs per second through the resident set (5)
	steadyFor  time.Duration // RINGFIRE_SCALE_STEADY_FOR: how long (6m: several of kube-apiserver's collections fall in every system's phase)
	settle     time.Duration // RINGFIRE_SCALE_SETTLE: from a system's start probe to its steady load (30s)
	steadyPods int           // RINGFIRE_SCALE_STEADY_PODS: pods per steady (and soak) Job (RINGFIRE_SCALE_TASK_PODS)
	probes     int           // RINGFIRE_SCALE_PROBES: Jobs created at a start or on the slots a fault moves (10)
	nodes      int           // RINGFIRE_SCALE_NODES: KWOK nodes (50)
	nodePods   int           // RINGFIRE_SCALE_NODE_PODS: pods a node takes (2500)
	kwokPar    int           // RINGFIRE_SCALE_KWOK_PARALLELISM: pod stages KWOK plays at once (16; KWOK's own default is 4)
	waitLimit  time.Duration // RINGFIRE_SCALE_WAIT: bound on each phase (30m)
	replicaArg []string      // RINGFIRE_SCALE_REPLICA_ARGS: more `ringfire run` flags
	apiEnv     []string      // RINGFIRE_SCALE_APISERVER_ENV: kube-apiserver's environment ("GOGC=200")
	apiArgs    []string      // RINGFIRE_SCALE_APISERVER_ARGS: more kube-apiserver flags ("--v=2" logs a trace of each request over 500 ms)
	profile    time.Duration // RINGFIRE_SCALE_FAILOVER_PROFILE: kube-apiserver's CPU profile this long from the kill, and metrics around the failover (failoverDiag; 0: off)
	pace       int           // RINGFIRE_SCALE_PACE: the +paced systems' --pod-list-rate (300)
	soak       time.Duration // RINGFIRE_SCALE_SOAK: for the systems named ringfire-N+soak, the steady load this long more after the faults (30m)
	killEvery  time.Duration // RINGFIRE_SCALE_SOAK_KILL_EVERY: during the soak, kill -9 and restart one replica this often (5m)
	failovers  int           // RINGFIRE_SCALE_FAILOVERS: kill -9 and restart rounds of ringfire at 2 replicas or more (3)
	logDir     string        // RINGFIRE_BENCH_LOGS: keep logs there
	revision   string
}

func scaleConfigFromEnv(b *testing.B) scaleConfig {
	b.Helper()
	sc := scaleConfig{
		systems:    strings.Split(envOr("RINGFIRE_SCALE_SYSTEMS", "ringfire-3,ringfire-1,ringfire-6,volcano,volcano-tuned"), ","),
		jobs:       envInts(b, "RINGFIRE_SCALE_JOBS", "10000")[0],
		taskPods:   envInts(b, "RINGFIRE_SCALE_TASK_PODS", "10")[0],
		rate:       envInts(b, "RINGFIRE_SCALE_RATE", "12")[0],
		steadyRate: envInts(b, "RINGFIRE_SCALE_STEADY_RATE", "5")[0],
		steadyFor:  envDuration(b, "RINGFIRE_SCALE_STEADY_FOR", 6*time.Minute),
		settle:     envDuration(b, "RINGFIRE_SCALE_SETTLE", 30*time.Second),
		steadyPods: envInts(b, "RINGFIRE_SCALE_STEADY_PODS", "0")[0],
		probes:     envInts(b, "RINGFIRE_SCALE_PROBES", "10")[0],
		nodes:      envInts(b, "RINGFIRE_SCALE_NODES", "50")[0],
		nodePods:   envInts(b, "RINGFIRE_SCALE_NODE_PODS", "2500")[0],
		kwokPar:    envInts(b, "RINGFIRE_SCALE_KWOK_PARALLELISM", "16")[0],
		waitLimit:  envDuration(b, "RINGFIRE_SCALE_WAIT", 30*time.Minute),
		replicaArg: strings.Fields(os.Getenv("RINGFIRE_SCALE_REPLICA_ARGS")),
		apiEnv:     strings.Fields(os.Getenv("RINGFIRE_SCALE_APISERVER_ENV")),
		apiArgs:    strings.Fields(os.Getenv("RINGFIRE_SCALE_APISERVER_ARGS")),
		soak:       envDuration(b, "RINGFIRE_SCALE_SOAK", 30*time.Minute),
		pace:       envInts(b, "RINGFIRE_SCALE_PACE", "300")[0],
		profile:    envDuration(b, "RINGFIRE_SCALE_FAILOVER_PROFILE", 0),
		killEvery:  envDuration(b, "RINGFIRE_SCALE_SOAK_KILL_EVERY", 5*time.Minute),
		failovers:  envInts(b, "RINGFIRE_SCALE_FAILOVERS", "3")[0],
		logDir:     os.Getenv("RINGFIRE_BENCH_LOGS"),
		revision:   procs.Revision(),
	}
	if sc.steadyPods <= 0 {
		sc.steadyPods = sc.taskPods
	}
	if sc.failovers < 1 || sc.failovers > 20 {
		b.Fatalf("RINGFIRE_SCALE_FAILOVERS=%d: between 1 and 20", sc.failovers)
	}
	if sc.profile > 0 {
		// The local control plane serves no profiles unless asked.
		sc.apiArgs = append([]string{"--profiling=true"}, sc.apiArgs...)
	}
	for _, sys := range sc.systems {
		if _, _, _, err := parseSystem(sys); err != nil {
			b.Fatalf("RINGFIRE_SCALE_SYSTEMS: %v", err)
		}
	}
	// Each system's steady Jobs and probes are deleted after it; the
	// cluster holds the resident set and one system's at a time.
	soak := time.Duration(0)
	if slices.ContainsFunc(sc.systems, soaks) {
		soak = sc.soak
	}
	total := (sc.jobs+(2+2*sc.failovers+int(soak/sc.killEvery))*sc.probes)*sc.taskPods + sc.steadyRate*int((sc.steadyFor+soak).Seconds())*sc.steadyPods
	if total > sc.nodes*sc.nodePods {
		b.Fatalf("%d pods do not fit on %d nodes of %d: raise RINGFIRE_SCALE_NODES or RINGFIRE_SCALE_NODE_PODS", total, sc.nodes, sc.nodePods)
	}
	return sc
}

func (sc scaleConfig) String() string {
	apiEnv := ""
	if extra := append(slices.Clone(sc.apiEnv), sc.apiArgs...); len(extra) > 0 {
		apiEnv = "; kube-apiserver with " + strings.Join(extra, " ")
	}
	return fmt.Sprintf("%d resident Jobs × %d pods at %d/s, then (after %v of settling) %d Jobs/s of %d pods for %v; %d nodes × %d pods, KWOK playing %d pod stages at once%s; ringfire at %s",
		sc.jobs, sc.taskPods, sc.rate, sc.settle, sc.steadyRate, sc.steadyPods, sc.steadyFor, sc.nodes, sc.nodePods, sc.kwokPar, apiEnv, sc.revision)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// parseSystem reads "ringfire-N", "volcano" or "volcano-tuned", and the
// options after a ringfire-N, each after a "+": "json" runs the replicas
// with --kube-api-content-type json, "paced" with --pod-list-rate
// RINGFIRE_SCALE_PACE, and "soak" adds the soak.
func parseSystem(s string) (kind string, replicas int, opts map[string]bool, err error) {
	base, rest, _ := strings.Cut(s, "+")
	opts = map[string]bool{}
	if rest != "" {
		for _, o := range strings.Split(rest, "+") {
			if !slices.Contains([]string{"json", "paced", "soak"}, o) || opts[o] {
				return "", 0, nil, fmt.Errorf("%q: options after ringfire-N are +json, +paced and +soak, each once", s)
			}
			opts[o] = true
		}
	}
	switch {
	case (base == "volcano" || base == "volcano-tuned") && rest == "":
		return "volcano", 1, opts, nil
	case strings.HasPrefix(base, "ringfire-"):
		n, err := strconv.Atoi(strings.TrimPrefix(base, "ringfire-"))
		if err != nil || n < 1 {
			return "", 0, nil, fmt.Errorf("%q: want ringfire-N with N ≥ 1", s)
		}
		return "ringfire", n, opts, nil
	}
	return "", 0, nil, fmt.Errorf("%q: want ringfire-N, volcano or volcano-tuned", s)
}

// soaks reports whether system s runs the soak.
func soaks(s string) bool {
	kind, _, opts, err := parseSystem(s)
	return err == nil && kind == "ringfire" && opts["soak"]
}

// scaleWorld is what the systems share: the control plane, the stand-in
// and the benchmark's clients.
type scaleWorld struct {
	sc      scaleConfig
	cluster *cluster.Cluster
	kube    kubernetes.Interface
	volcano vcclient.Interface
	logDir  string
}

func startScaleWorld(b *testing.B, sc scaleConfig) *scaleWorld {
	b.Helper()
	log := hclog.New(&hclog.LoggerOptions{Name: "bench", Level: hclog.Warn, Output: os.Stderr})
	logDir, clusterDir := dirs(b, config{logDir: sc.logDir})
	cl := cluster.StartForTest(b, cluster.Options{
		Nodes: sc.nodes, NodePods: strconv.Itoa(sc.nodePods), Dir: clusterDir, Logger: log.Named("cluster"),
		StartTimeout: 5 * time.Minute, KWOKPodParallelism: sc.kwokPar, APIServerEnv: sc.apiEnv, APIServerArgs: sc.apiArgs,
	})
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	w := &scaleWorld{sc: sc, cluster: cl, logDir: logDir}
	cfg := cl.RESTConfig()
	cfg.QPS, cfg.Burst = 5000, 5000
	w.kube, w.volcano = kubernetes.NewForConfigOrDie(cfg), vcclient.NewForConfigOrDie(cfg)
	installCtx, installDone := context.WithTimeout(ctx, 2*time.Minute)
	defer installDone()
	if err := crds.Install(installCtx, cl.RESTConfig()); err != nil {
		b.Fatal(err)
	}
	standinDone := make(chan struct{})
	go func() {
		defer close(standinDone)
		standin.RunWorkers(ctx, w.kube, w.volcano, cl.NodeNames(), 32)
	}()
	b.Cleanup(func() { cancel(); <-standinDone })
	if err := makeNamespaces(ctx, w.kube, []string{"resident"}, time.Minute); err != nil {
		b.Fatal(err)
	}
	return w
}

// residentPodRun is how long a resident pod runs on its fake node: longer
// than any run, so that the set stays resident through every system's
// phases. At an hour, a run of every system with 6-minute steady phases (85
// minutes) saw the first Jobs' pods finish during the last system's start,
// which then measured 50,000 pods completing, not a start.
const residentPodRun = 24 * time.Hour

// scaleEnv is one system running on the world.
type scaleEnv struct {
	*scaleWorld
	kind     string
	args     procs.Args // the replicas' (ringfire)
	mu       sync.Mutex // guards replicas' elements, replaced by restarts while the sampler reads them
	replicas []*procs.Replica
	vcm      *volcano.Program // vc-controller-manager (volcano)
	vcArgs   []string
	vcBin    string
	sysLogs  string // this system's logs, under the world's logDir
}

// startSystem starts sys on w; it is stopped when b ends.
func startSystem(b *testing.B, w *scaleWorld, bin, sys string) *scaleEnv {
	b.Helper()
	kind, n, opts, _ := parseSystem(sys)
	e := &scaleEnv{scaleWorld: w, kind: kind, sysLogs: filepath.Join(w.logDir, sys)}
	if err := os.MkdirAll(e.sysLogs, 0o755); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	switch kind {
	case "ringfire":
		ring := localetcd.StartForTest(b)
		e.args = procs.Args{Bin: bin, Etcd: ring.Endpoint(), Kubeconfig: w.cluster.Kubeconfig(), LogDir: e.sysLogs,
			LogLevel: "info", Controllers: "job,queue,podgroup", Extra: w.sc.replicaArg}
		if opts["json"] {
			e.args.Extra = append(slices.Clone(e.args.Extra), "--kube-api-content-type", "json")
		}
		if opts["paced"] {
			e.args.Extra = append(slices.Clone(e.args.Extra), "--pod-list-rate", strconv.Itoa(w.sc.pace))
		}
		b.Cleanup(func() { procs.StopAll(b, e.replicas) })
		// The names a StatefulSet named ringfire gives its pods (deploy/ringfire),
		// and so the slot shares a deployment of n replicas gets (shard.Assign's
		// spread depends on the names; docs/benchmarks.md).
		for i := range n {
			e.replicas = append(e.replicas, e.startReplica(b, fmt.Sprintf("ringfire-%d", i)))
		}
		if err := procs.WaitRing(ctx, e.replicas, 2*time.Minute); err != nil {
			b.Fatal(err)
		}
	default:
		e.vcBin = volcano.Bin(b)
		e.vcArgs = []string{"--controllers", "job-controller,queue-controller,pg-controller"}
		if sys == "volcano-tuned" {
			e.vcArgs = append(e.vcArgs, "--worker-threads", "50", "--worker-threads-for-podgroup", "50",
				"--kube-api-qps", "1000", "--kube-api-burst", "2000")
		}
		e.vcm = volcano.Start(b, e.vcBin, e.sysLogs, w.cluster.Kubeconfig(), "vc-controller-manager", e.vcArgs...)
		b.Cleanup(func() { e.vcm.Stop() })
	}
	return e
}

// stop stops the system: its replicas, or Volcano's controller manager.
func (e *scaleEnv) stop(b *testing.B) {
	if e.vcm != nil {
		e.vcm.Stop()
	}
	procs.StopAll(b, e.replicas)
}

// pids are the processes whose memory and CPU a run reports, by name.
func (e *scaleEnv) pids() map[string]int {
	pids := map[string]int{"bench-process": os.Getpid()}
	for _, name := range []cluster.Component{cluster.APIServer, cluster.Etcd, cluster.KWOK} {
		if pid, err := readPIDFile(filepath.Join(e.cluster.Dir(), string(name)+".pid")); err == nil {
			pids[string(name)] = pid
		}
	}
	for _, r := range e.live() {
		pids[r.ID] = r.PID()
	}
	if e.vcm != nil {
		pids["vc-controller-manager"] = e.vcm.PID()
	}
	return pids
}

// controllerNames are the names of pids that are the system under test.
func (e *scaleEnv) controllerNames() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, r := range e.replicas {
		out = append(out, r.ID)
	}
	if e.vcm != nil {
		out = append(out, "vc-controller-manager")
	}
	return out
}

// startReplica starts ringfire replica id with its pprof server on a free
// port of the loopback, for heapProfiles.
func (e *scaleEnv) startReplica(b *testing.B, id string) *procs.Replica {
	b.Helper()
	port, err := procs.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	return procs.StartOn(b, e.args, id, procs.Addrs{Pprof: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))})
}

// afterGC is a replica's memory right after a forced collection: what does
// not depend on where in its collection cycle the replica was, unlike its RSS
// (a Go heap grows to twice its live size between collections, GOGC=100, and
// keeps the freed pages until the scavenger returns them).
type afterGC struct {
	inUse float64 // RSS less the heap pages the runtime holds free (heap_idle − heap_released)
	live  float64 // live heap (heap_alloc)
}

// heapProfiles writes each live replica's heap profile, taken after a
// collection, to heap-<phase>-<id>.pprof in the system's log directory:
// what a replica's steady RSS is made of (`go tool pprof -sample_index
// inuse_space`). A failure is printed, not fatal: it is a diagnostic. It
// returns each replica's memory after that collection.
func (e *scaleEnv) heapProfiles(ctx context.Context, phase string) map[string]afterGC {
	out := map[string]afterGC{}
	for _, r := range e.live() {
		body, code, err := r.Get(ctx, "/debug/pprof/heap?gc=1")
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("status %d", code)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(e.sysLogs, "heap-"+phase+"-"+r.ID+".pprof"), []byte(body), 0o644)
		}
		if err != nil {
			fmt.Printf("heap profile of %s: %v\n", r.ID, err)
		}
		// Beside it, how the process's resident memory splits (anonymous,
		// the binary's pages) and the runtime's own account of it.
		var mem strings.Builder
		if rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", r.PID())); err == nil {
			mem.Write(rollup)
		}
		if metrics, code, err := r.Get(ctx, "/metrics"); err == nil && code == http.StatusOK {
			for line := range strings.Lines(metrics) {
				if strings.HasPrefix(line, "go_") && !strings.HasPrefix(line, "go_gc_duration") {
					mem.WriteString(line)
				}
			}
			live, ok1 := procs.MetricValue(metrics, "go_memstats_heap_alloc_bytes")
			idle, ok2 := procs.MetricValue(metrics, "go_memstats_heap_idle_bytes")
			released, ok3 := procs.MetricValue(metrics, "go_memstats_heap_released_bytes")
			if u, err := readProc(r.PID()); err == nil && ok1 && ok2 && ok3 {
				out[r.ID] = afterGC{inUse: u.rss - (idle - released), live: live}
			}
		}
		if err := os.WriteFile(filepath.Join(e.sysLogs, "mem-"+phase+"-"+r.ID+".txt"), []byte(mem.String()), 0o644); err != nil {
			fmt.Printf("memory of %s: %v\n", r.ID, err)
		}
	}
	return out
}

// setReplica replaces replica i, restarted.
func (e *scaleEnv) setReplica(i int, r *procs.Replica) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.replicas[i] = r
}

// live are the replicas whose process runs.
func (e *scaleEnv) live() []*procs.Replica {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*procs.Replica
	for _, r := range e.replicas {
		if !r.Exited() {
			out = append(out, r)
		}
	}
	return out
}

// rssSample is the resident memory of every process at one moment.
type rssSample struct {
	at    time.Time
	phase string
	rss   map[string]float64
	cpu   map[string]float64
	gor   map[string]float64 // go_goroutines of the replicas
}

// sampler reads the processes' RSS and CPU every period.
type sampler struct {
	mu      sync.Mutex
	phase   string
	samples []rssSample
}

func (s *sampler) setPhase(p string) { s.mu.Lock(); s.phase = p; s.mu.Unlock() }

func (s *sampler) run(ctx context.Context, e *scaleEnv, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		smp := rssSample{at: time.Now(), rss: map[string]float64{}, cpu: map[string]float64{}, gor: map[string]float64{}}
		for name, pid := range e.pids() {
			if u, err := readProc(pid); err == nil {
				smp.rss[name], smp.cpu[name] = u.rss, u.cpuSeconds
			}
		}
		for _, r := range e.live() {
			if v, err := r.Metric(ctx, "go_goroutines"); err == nil {
				smp.gor[r.ID] = v
			}
		}
		s.mu.Lock()
		smp.phase = s.phase
		s.samples = append(s.samples, smp)
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// meanRSS is the mean RSS of name over the samples of phase ("": all), and
// the peak.
func (s *sampler) meanRSS(phase, name string) (mean, peak float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, smp := range s.samples {
		if v, ok := smp.rss[name]; ok && (phase == "" || smp.phase == phase) {
			mean += v
			n++
			peak = max(peak, v)
		}
	}
	if n == 0 {
		return 0, 0
	}
	return mean / float64(n), peak
}

// cpuTimeline is, per sample of the phases, each process's CPU use since
// the sample before (cores), so that a slow window or failover can be laid
// beside what was busy at the time.
func (s *sampler) cpuTimeline(phases ...string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for _, smp := range s.samples {
		for name := range smp.cpu {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	var t strings.Builder
	fmt.Fprintf(&t, "CPU (cores) per sample of %s:\n  %-12s %-8s", strings.Join(phases, ", "), "at", "phase")
	for _, name := range names {
		fmt.Fprintf(&t, " %14s", name)
	}
	t.WriteString("\n")
	for i := 1; i < len(s.samples); i++ {
		prev, cur := s.samples[i-1], s.samples[i]
		if !slices.Contains(phases, cur.phase) {
			continue
		}
		secs := cur.at.Sub(prev.at).Seconds()
		fmt.Fprintf(&t, "  %-12s %-8s", cur.at.Format("15:04:05.0"), cur.phase)
		for _, name := range names {
			v, ok := cur.cpu[name]
			p, okp := prev.cpu[name]
			if !ok || !okp || secs <= 0 || v < p {
				fmt.Fprintf(&t, " %14s", "-")
				continue
			}
			fmt.Fprintf(&t, " %14.2f", (v-p)/secs)
		}
		t.WriteString("\n")
	}
	return t.String()
}

// rssSlope is the least-squares slope of name's RSS over the samples of
// phase, in bytes per minute: flat memory is near zero.
func (s *sampler) rssSlope(phase, name string) float64 {
	return s.slopeOf(phase, name, time.Time{}, func(smp rssSample) map[string]float64 { return smp.rss })
}

// slopeOf is the least-squares slope, per minute, of name's values (of
// what picks from a sample) over the samples of phase taken after from.
func (s *sampler) slopeOf(phase, name string, from time.Time, what func(rssSample) map[string]float64) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var xs, ys []float64
	for _, smp := range s.samples {
		if v, ok := what(smp)[name]; ok && smp.phase == phase && !smp.at.Before(from) {
			xs, ys = append(xs, smp.at.Sub(s.samples[0].at).Minutes()), append(ys, v)
		}
	}
	return slope(xs, ys)
}

func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// scaleResult is one system's row.
type scaleResult struct {
	system         string
	start          time.Duration // system started → Jobs created then have all pods
	resident       time.Duration // first create → last resident pod seen (the first system)
	residentP99    time.Duration
	residentCPU    float64 // controller CPU-s per 1,000 resident Jobs
	steadyP50      time.Duration
	steadyP99      time.Duration
	steadyWorstWin time.Duration // worst 5-s window's p99
	steadyMedWin   time.Duration // median 5-s window's p99: the steady state past any backlog
	steadyWindows  string        // the per-window table
	steadyMissing  int
	steadyCPU      float64 // controller CPU-s per 1,000 steady Jobs
	apiserverCPU   float64 // kube-apiserver CPU-s per 1,000 steady Jobs
	rss            map[string][2]float64
	peakRSS        map[string]float64
	afterGC        map[string]afterGC // the replicas', at the end of the steady load
	slotsHeld      []time.Duration    // each failover: kill → slots held again
	failover       []time.Duration    // each failover: kill → Jobs on its slots have all pods
	restart        []time.Duration    // each restart → Jobs on what it holds have all pods
	duplicates     int
	soak           *soakResult
	errs           []error
}

func benchScale(b *testing.B, w *scaleWorld, bin, sys string, index int) {
	sc := w.sc
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	steadyNS, probeNS := fmt.Sprintf("steady-%d", index), fmt.Sprintf("probe-%d", index)
	if err := makeNamespaces(ctx, w.kube, []string{steadyNS, probeNS}, time.Minute); err != nil {
		b.Fatal(err)
	}
	res := scaleResult{system: sys, rss: map[string][2]float64{}, peakRSS: map[string]float64{}}
	progress := func(string, ...any) {}
	if testing.Verbose() {
		progress = b.Logf
	}

	b.ResetTimer()
	// 1. Start, on what the systems before left.
	startAt := time.Now()
	e := startSystem(b, w, bin, sys)
	smp := &sampler{phase: "start"}
	samplingCtx, stopSampling := context.WithCancel(ctx)
	var sampling sync.WaitGroup
	sampling.Go(func() { smp.run(samplingCtx, e, 5*time.Second) })
	defer func() { stopSampling(); sampling.Wait() }()
	var err error
	res.start, err = e.probe(ctx, startAt, probeNS, probeNames(probeNS, "start", sc.probes, func(string) bool { return true }))
	if err != nil {
		res.errs = append(res.errs, fmt.Errorf("start: %w", err))
	}

	// 0. The resident set, made by the first system.
	if index == 0 {
		smp.setPhase("resident")
		cpu0 := cpuSeconds(e.pids())
		resident := load{kube: w.kube, volcano: w.volcano, namespace: "resident", jobs: sc.jobs, taskPods: sc.taskPods,
			rate: sc.rate, podRun: residentPodRun, limit: sc.waitLimit, log: progress}
		r, err := resident.run(ctx)
		res.resident, res.residentP99, res.duplicates = r.allPods, percentile(r.jobLatency, 99), r.duplicates
		res.residentCPU = e.controllerCPU(cpu0, cpuSeconds(e.pids())) / float64(sc.jobs) * 1000
		if err != nil {
			res.errs = append(res.errs, fmt.Errorf("resident: %w", err))
			e.report(b, res, smp)
			b.FailNow()
		}
		progress("resident set of %d Jobs in %v", sc.jobs, r.allPods)
		// The steady load starts once every resident pod runs (the nodes
		// may lag the creates) and the last writes are past.
		if err := waitAllRunning(ctx, w.kube, "resident", sc.waitLimit); err != nil {
			res.errs = append(res.errs, err)
		}
		progress("resident pods all Running %v after the first create", time.Since(r.start))
		// KWOK may still be working off the set's stages after every pod is Running
		// (0.2-1.2 core for minutes in some runs, against 0.04 in others); the phases
		// that follow would measure it too.
		progress("%s", e.waitNodesQuiet(ctx))
	}

	// 2. Steady load through it, once a system that just started has settled.
	if index > 0 && sc.settle > 0 {
		smp.setPhase("settle")
		progress("settling for %v", sc.settle)
		select {
		case <-time.After(sc.settle):
		case <-ctx.Done():
		}
		// The fake nodes may be working off the last system's namespaces, or
		// relisting 100,000 pods (a KWOK collection storm of minutes, 0.5-1
		// core, in some runs): every system's steady load starts on quiet nodes,
		// as the first system's does.
		progress("%s", e.waitNodesQuiet(ctx))
	}
	smp.setPhase("steady")
	cpu2 := cpuSeconds(e.pids())
	steadyJobs := sc.steadyRate * int(sc.steadyFor.Seconds())
	steady := load{kube: w.kube, volcano: w.volcano, namespace: steadyNS, jobs: steadyJobs, taskPods: sc.steadyPods,
		rate: sc.steadyRate, podRun: time.Second, limit: sc.steadyFor + sc.waitLimit, log: progress, steps: true}
	s, err := steady.run(ctx)
	cpu3 := cpuSeconds(e.pids())
	progress("steady load from %s", s.start.Format("15:04:05.000"))
	smp.setPhase("after")
	if err != nil {
		res.errs = append(res.errs, fmt.Errorf("steady: %w", err))
	}
	res.steadyP50, res.steadyP99 = percentile(s.jobLatency, 50), percentile(s.jobLatency, 99)
	ws := windows(s, 5*time.Second)
	res.steadyWindows, res.steadyWorstWin = reportWindows(ws, 5*time.Second)
	res.steadyMedWin = medianWindowP99(ws)
	for _, w := range ws {
		res.steadyMissing += w.missing
	}
	res.duplicates += s.duplicates
	res.steadyCPU = e.controllerCPU(cpu2, cpu3) / float64(steadyJobs) * 1000
	res.apiserverCPU = (cpu3[string(cluster.APIServer)] - cpu2[string(cluster.APIServer)]) / float64(steadyJobs) * 1000
	for _, name := range e.controllerNames() {
		mean, _ := smp.meanRSS("steady", name)
		_, peak := smp.meanRSS("", name)
		res.rss[name] = [2]float64{mean, peak}
	}
	for name, pid := range e.pids() {
		if u, err := readProc(pid); err == nil {
			res.peakRSS[name] = u.peakRSS
		}
	}

	res.afterGC = e.heapProfiles(ctx, "steady")

	// 3 and 4. Faults, on quiet fake nodes: a failover measures the ring and
	// the API server, not KWOK finishing the steady load's pods or collecting.
	smp.setPhase("faults")
	progress("%s", e.waitNodesQuiet(ctx))
	if err := e.faults(ctx, b, probeNS, &res); err != nil {
		res.errs = append(res.errs, err)
	}
	soakNS := ""
	if sc.soak > 0 && soaks(sys) {
		soakNS = fmt.Sprintf("soak-%d", index)
		if err := makeNamespaces(ctx, w.kube, []string{soakNS}, time.Minute); err != nil {
			b.Fatal(err)
		}
		smp.setPhase("soak")
		res.soak = e.runSoak(ctx, b, soakNS, probeNS, smp, progress)
		res.duplicates += res.soak.duplicates
		res.errs = append(res.errs, res.soak.errs...)
	}
	b.StopTimer()
	e.report(b, res, smp)
	// The next system sees the resident set only. The system still runs
	// while its namespaces go: it owns their finalizers.
	gone := []string{steadyNS, probeNS}
	if soakNS != "" {
		gone = append(gone, soakNS)
	}
	if err := deleteNamespaces(ctx, w.kube, w.volcano, gone, 5*time.Minute); err != nil {
		b.Logf("cleanup: %v", err)
	}
	e.stop(b)
}

// deletePodsNow deletes the pods of namespace ns with a grace period of 0,
// a page of 500 at a time from 16 goroutines: one DeleteCollection of
// thousands of pods outlives the API server's request timeout.
func deletePodsNow(ctx context.Context, kube kubernetes.Interface, ns string) error {
	zero := int64(0)
	for range 100 {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 500})
		if err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return nil
		}
		names := make(chan string)
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for name := range names {
					_ = kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
				}
			})
		}
		for _, pod := range list.Items {
			names <- pod.Name
		}
		close(names)
		wg.Wait()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return fmt.Errorf("pods of %s still there after 100 pages", ns)
}

// waitAllRunning waits, up to limit, until no pod of namespace ns is in
// another phase than Running.
func waitAllRunning(ctx context.Context, kube kubernetes.Interface, ns string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Running", Limit: 1})
		if err == nil && len(list.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pods of %s not all Running within %v", ns, limit)
		case <-time.After(5 * time.Second):
		}
	}
}

// The fake nodes are quiet once KWOK has used under nodesQuiet cores in each
// of the 5-s samples of nodesQuietFor; waitNodesQuiet waits no longer than
// nodesQuietLimit for that.
const (
	nodesQuiet      = 0.1
	nodesQuietFor   = 15 * time.Second
	nodesQuietLimit = 10 * time.Minute
)

// waitNodesQuiet waits until KWOK has used under nodesQuiet cores in every
// 5-s sample for the last nodesQuietFor, at most nodesQuietLimit, and says how
// that went. At least nodesQuietFor passes (the last writes of the phase
// before settle).
func (e *scaleEnv) waitNodesQuiet(ctx context.Context) string {
	const sample = 5 * time.Second
	pid, cores, period, limit := e.pids()[string(cluster.KWOK)], nodesQuiet, nodesQuietFor, nodesQuietLimit
	start, deadline := time.Now(), time.Now().Add(limit)
	last, quietSince := procCPU(pid), time.Now()
	var used float64
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return "the fake nodes' quiet not waited for: " + ctx.Err().Error()
		case <-time.After(sample):
		}
		now := procCPU(pid)
		if math.IsNaN(now) {
			return fmt.Sprintf("the fake nodes' CPU unreadable (pid %d); waited %v", pid, time.Since(start).Round(time.Second))
		}
		used, last = (now-last)/sample.Seconds(), now
		if used >= cores {
			quietSince = time.Now()
		} else if time.Since(quietSince) >= period {
			return fmt.Sprintf("the fake nodes quiet (under %.2f core for %v) after %v of waiting", cores, period, time.Since(start).Round(time.Second))
		}
	}
	return fmt.Sprintf("the fake nodes still at %.2f core after %v of waiting; the phase that follows measures them too", used, limit)
}

// deleteNamespaces deletes the namespaces and waits, up to limit, until
// they are gone. Their Jobs go first, so that no controller makes pods
// again, then their pods at once (grace period 0: the fake nodes would
// take minutes to end thousands of them), then the namespaces.
func deleteNamespaces(ctx context.Context, kube kubernetes.Interface, vc vcclient.Interface, names []string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var errs []error
	for _, name := range names {
		// Best effort: what is left, the namespace's deletion takes, slower.
		if err := vc.BatchV1alpha1().Jobs(name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, deletePodsNow(ctx, kube, name))
		if err := kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	for _, name := range names {
		for {
			if _, err := kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				break
			}
			select {
			case <-ctx.Done():
				return errors.Join(append(errs, fmt.Errorf("namespace %s not gone within %v", name, limit))...)
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}

// controllerCPU is the CPU-s the system under test spent between two readings.
func (e *scaleEnv) controllerCPU(before, after map[string]float64) float64 {
	sum := 0.0
	for _, name := range e.controllerNames() {
		if a, ok := after[name]; ok {
			sum += a - before[name]
		}
	}
	return sum
}

// faults kills and restarts: for ringfire with two or more replicas, one
// replica is killed (failover), then started again (restart), e.sc.failovers
// times, the last replica first and then the one before it; with one
// replica, or Volcano, the controller manager is killed and started again at
// once (restart). Probe Jobs go to namespace ns.
func (e *scaleEnv) faults(ctx context.Context, b *testing.B, ns string, res *scaleResult) error {
	wave := 0
	probe := func(at time.Time, pick func(key string) bool) (time.Duration, error) {
		wave++
		return e.probe(ctx, at, ns, probeNames(ns, fmt.Sprintf("w%d", wave), e.sc.probes, pick))
	}
	if e.kind != "ringfire" {
		e.vcm.Kill()
		at := time.Now()
		e.vcm = volcano.Start(b, e.vcBin, e.sysLogs, e.cluster.Kubeconfig(), "vc-controller-manager", e.vcArgs...)
		d, err := probe(at, func(string) bool { return true })
		res.restart = append(res.restart, d)
		return err
	}
	rounds := 1
	if len(e.replicas) > 1 {
		rounds = e.sc.failovers
	}
	var errs []error
	for round := range rounds {
		if round > 0 {
			// Each kill starts from a settled ring on quiet fake nodes, as the first did.
			progress := e.waitNodesQuiet(ctx)
			fmt.Printf("failover %d: %s\n", round+1, progress)
		}
		v := len(e.replicas) - 1 - round%len(e.replicas)
		if err := e.killAndRestart(ctx, b, v, round, probe, res); err != nil {
			errs = append(errs, fmt.Errorf("failover %d: %w", round+1, err))
			break // a ring that did not come back is no start for the next round
		}
	}
	return errors.Join(errs...)
}

// killAndRestart kills replica v (failover, when other replicas survive it)
// and starts it again (restart), appending what it measures to res.
func (e *scaleEnv) killAndRestart(ctx context.Context, b *testing.B, v, round int, probe func(time.Time, func(string) bool) (time.Duration, error), res *scaleResult) error {
	victim := e.replicas[v]
	st, err := victim.Status(ctx)
	if err != nil {
		return err
	}
	held := shard.NewSlotSet(st.Held)
	survivors := slices.Concat(e.replicas[:v], e.replicas[v+1:])
	diagDone := e.failoverDiag(ctx, survivors, round)
	if err := victim.Signal(syscall.SIGKILL); err != nil {
		diagDone()
		return err
	}
	at := time.Now()
	var errs []error
	if len(survivors) > 0 {
		done := make(chan time.Duration, 1)
		go func() {
			for ctx.Err() == nil && time.Since(at) < e.sc.waitLimit {
				if ringSettled(ctx, survivors) {
					done <- time.Since(at)
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			done <- 0
		}()
		d, err := probe(at, func(key string) bool { return held.HasKey(key, st.Slots) })
		res.failover = append(res.failover, d)
		res.slotsHeld = append(res.slotsHeld, <-done)
		errs = append(errs, err)
	}
	diagDone()
	// Restart the victim, once the killed process is gone.
	for deadline := time.Now().Add(10 * time.Second); !victim.Exited() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	restarted := e.startReplica(b, victim.ID)
	e.setReplica(v, restarted)
	at = time.Now()
	if err := procs.WaitRing(ctx, e.replicas, 2*time.Minute); err != nil {
		return errors.Join(append(errs, err)...)
	}
	st, err = restarted.Status(ctx)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	mine := shard.NewSlotSet(st.Held)
	d, err := probe(at, func(key string) bool { return mine.HasKey(key, st.Slots) })
	res.restart = append(res.restart, d)
	return errors.Join(append(errs, err)...)
}

// ringSettled reports whether every replica holds what it is assigned and
// together they hold every slot.
func ringSettled(ctx context.Context, replicas []*procs.Replica) bool {
	held, slots := 0, 0
	for _, r := range replicas {
		st, err := r.Status(ctx)
		if err != nil || len(st.Members) != len(replicas) || len(st.Held) != st.Assigned {
			return false
		}
		held, slots = held+len(st.Held), st.Slots
	}
	return slots > 0 && held == slots
}

// probeNames picks n Job names of namespace ns whose keys pick likes.
func probeNames(ns, prefix string, n int, pick func(key string) bool) []string {
	var out []string
	for i := 0; len(out) < n && i < 1_000_000; i++ {
		name := fmt.Sprintf("probe-%s-%d", prefix, i)
		if pick(ns + "/" + name) {
			out = append(out, name)
		}
	}
	return out
}

// probe creates the named Jobs in namespace ns at once and returns the
// time from at until every one of their pods exists.
func (e *scaleEnv) probe(ctx context.Context, at time.Time, ns string, names []string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, e.sc.waitLimit)
	defer cancel()
	l := load{kube: e.kube, volcano: e.volcano, namespace: ns, taskPods: e.sc.taskPods, podRun: time.Second}
	w, err := l.watchPods(ctx)
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	steps, err := watchChain(ctx, e.volcano, ns)
	if err != nil {
		return 0, err
	}
	var mu sync.Mutex
	created := map[string]time.Time{}
	want := map[string]bool{}
	for _, name := range names {
		want[name] = true
		go func() {
			job := benchJob(ns, name, e.sc.taskPods, time.Second)
			for range 5 {
				_, err := e.volcano.BatchV1alpha1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
				if err == nil {
					mu.Lock()
					created[name] = time.Now()
					mu.Unlock()
				}
				if err == nil || ctx.Err() != nil {
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
		}()
	}
	tally := newPodTally(e.sc.taskPods, len(names)*e.sc.taskPods)
	left := func() int {
		n := 0
		for _, name := range names {
			if _, done := tally.jobDone[name]; !done {
				n++
			}
		}
		return n
	}
	for left() > 0 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return 0, errors.New("probe pod watch ended")
			}
			if pod, isPod := ev.Object.(*corev1.Pod); isPod && ev.Type == watch.Added && want[pod.Labels[batch.JobNameKey]] {
				tally.add(pod)
			}
		case <-ctx.Done():
			return time.Since(at), fmt.Errorf("%d of %d probe Jobs without all pods after %v", left(), len(names), e.sc.waitLimit)
		}
	}
	took := time.Since(at)
	var all [][3]time.Duration
	mu.Lock()
	for _, name := range names {
		if s, ok := steps.steps(name, created[name], tally.jobDone[name]); ok {
			all = append(all, s)
		}
	}
	mu.Unlock()
	fmt.Printf("probe %s: %d Jobs have all pods %.1fs after %s; %s\n", ns, len(names), took.Seconds(), at.Format("15:04:05.000"), stepsLine(all))
	return took, nil
}

func (e *scaleEnv) report(b *testing.B, res scaleResult, smp *sampler) {
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s (%s)\n", b.Name(), e.sc)
	for _, err := range res.errs {
		b.Errorf("%v", err)
		fmt.Fprintf(&out, "error: %v\n", err)
	}
	if res.duplicates > 0 {
		b.Errorf("%d pods created twice", res.duplicates)
	}
	fmt.Fprintf(&out, "start: Jobs created as it started have all pods %.1fs after the start\n", res.start.Seconds())
	if res.resident > 0 {
		fmt.Fprintf(&out, "resident set: %d Jobs × %d pods in %.1fs (create → all pods p99 %.2fs), controllers %.1f CPU-s per 1,000 Jobs\n",
			e.sc.jobs, e.sc.taskPods, res.resident.Seconds(), res.residentP99.Seconds(), res.residentCPU)
	}
	fmt.Fprintf(&out, "steady %d Jobs/s: create → all pods p50 %.2fs p99 %.2fs, 5-s windows' p99 median %.2fs worst %.2fs, %d Jobs without all pods; controllers %.1f CPU-s per 1,000 Jobs, kube-apiserver %.1f\n",
		e.sc.steadyRate, res.steadyP50.Seconds(), res.steadyP99.Seconds(), res.steadyMedWin.Seconds(), res.steadyWorstWin.Seconds(), res.steadyMissing, res.steadyCPU, res.apiserverCPU)
	out.WriteString(res.steadyWindows)
	names := slices.Sorted(maps.Keys(res.peakRSS))
	fmt.Fprintf(&out, "memory (MiB): %-22s %8s %8s %8s %10s %8s %8s\n", "process", "steady", "peak", "VmHWM", "slope/min", "in use", "live")
	for _, name := range names {
		rss, ok := res.rss[name]
		if !ok {
			fmt.Fprintf(&out, "  %-34s %8s %8s %8.0f\n", name, "", "", res.peakRSS[name]/mib)
			continue
		}
		fmt.Fprintf(&out, "  %-34s %8.0f %8.0f %8.0f %10.2f", name, rss[0]/mib, rss[1]/mib, res.peakRSS[name]/mib, smp.rssSlope("steady", name)/mib)
		if m, ok := res.afterGC[name]; ok {
			fmt.Fprintf(&out, " %8.0f %8.0f", m.inUse/mib, m.live/mib)
		}
		out.WriteString("\n")
	}
	if len(res.afterGC) > 0 {
		out.WriteString("  (in use, live: right after a forced collection at the end of the steady load; in use is the RSS less the heap pages the runtime holds free, live the heap's live objects)\n")
	}
	out.WriteString(smp.cpuTimeline("steady", "faults"))
	for i := range res.failover {
		fmt.Fprintf(&out, "failover %d (kill -9 of one replica): its slots held again in %.1fs; Jobs created on them have all pods %.1fs after the kill\n",
			i+1, res.slotsHeld[i].Seconds(), res.failover[i].Seconds())
	}
	if len(res.failover) > 1 {
		fmt.Fprintf(&out, "failover median: slots held again in %.1fs; Jobs have all pods %.1fs after the kill (worst %.1fs)\n",
			median(res.slotsHeld).Seconds(), median(res.failover).Seconds(), slices.Max(res.failover).Seconds())
	}
	for i, d := range res.restart {
		fmt.Fprintf(&out, "restart %d: Jobs created on what it holds have all pods %.1fs after the start\n", i+1, d.Seconds())
	}
	if res.soak != nil {
		out.WriteString(res.soak.String())
	}
	fmt.Print(out.String())
	b.ReportMetric(res.start.Seconds(), "start-s")
	b.ReportMetric(res.steadyP99.Seconds(), "steady-p99-s")
	b.ReportMetric(res.steadyCPU, "ctl-CPU-s/1000jobs")
	b.ReportMetric(median(res.failover).Seconds(), "failover-s")
	if len(res.failover) > 0 {
		b.ReportMetric(slices.Max(res.failover).Seconds(), "worst-failover-s")
	}
	b.ReportMetric(median(res.restart).Seconds(), "restart-s")
	var steadyRSS []float64
	for _, name := range e.controllerNames() {
		steadyRSS = append(steadyRSS, res.rss[name][0])
	}
	sort.Float64s(steadyRSS)
	if len(steadyRSS) > 0 {
		b.ReportMetric(steadyRSS[len(steadyRSS)-1]/mib, "max-steady-RSS-MiB")
	}
	var inUse float64
	for _, m := range res.afterGC {
		inUse = max(inUse, m.inUse)
	}
	if inUse > 0 {
		b.ReportMetric(inUse/mib, "max-in-use-after-GC-MiB")
	}
}

// soakResult is what a soak measured.
type soakResult struct {
	length      time.Duration
	jobs        int
	finished    map[batch.JobPhase]int
	kills       []time.Duration // each kill → Jobs on the victim's slots have all pods
	duplicates  int
	rssSlope    map[string]float64 // bytes per minute, after the warm-up, of the replicas never killed
	gorSlope    map[string]float64 // goroutines per minute, likewise
	rssFrom, to map[string]float64 // mean RSS over the first and the last five minutes after warm-up
	errs        []error
}

func (s *soakResult) String() string {
	var out strings.Builder
	fmt.Fprintf(&out, "soak %v: %d Jobs at the steady rate, one replica killed -9 and restarted %d times (kill → its slots' new Jobs have all pods:",
		s.length, s.jobs, len(s.kills))
	for _, d := range s.kills {
		fmt.Fprintf(&out, " %.1fs", d.Seconds())
	}
	fmt.Fprintf(&out, "); Jobs by phase at the end %v; %d pods created twice\n", s.finished, s.duplicates)
	for _, id := range slices.Sorted(maps.Keys(s.rssSlope)) {
		fmt.Fprintf(&out, "  %s (never killed): RSS %.0f → %.0f MiB, slope %.2f MiB/min; goroutines slope %.2f/min\n",
			id, s.rssFrom[id]/mib, s.to[id]/mib, s.rssSlope[id]/mib, s.gorSlope[id])
	}
	return out.String()
}

// runSoak runs the steady load for the soak's length in namespace ns and,
// every killEvery, kills -9 the last replica, creates Jobs on its slots
// (in probeNS), and starts it again. Every soak Job must finish Completed,
// and no pod may be created twice. The other replicas run throughout:
// their RSS and goroutines after a warm-up of one kill period are fit by a
// line, whose slope is reported.
func (e *scaleEnv) runSoak(ctx context.Context, b *testing.B, ns, probeNS string, smp *sampler, progress func(string, ...any)) *soakResult {
	sc := e.sc
	res := &soakResult{length: sc.soak, jobs: sc.steadyRate * int(sc.soak.Seconds()), rssSlope: map[string]float64{},
		gorSlope: map[string]float64{}, rssFrom: map[string]float64{}, to: map[string]float64{}}
	start := time.Now()
	jobsCtx, stopJobs := context.WithCancel(ctx)
	defer stopJobs()
	jw := watchJobs(jobsCtx, e.volcano, []string{ns})
	loadDone := make(chan loadResult, 1)
	var loadErr error
	go func() {
		l := load{kube: e.kube, volcano: e.volcano, namespace: ns, jobs: res.jobs, taskPods: sc.steadyPods,
			rate: sc.steadyRate, podRun: time.Second, limit: sc.soak + sc.waitLimit, log: progress,
			// Finished Jobs go after 5 minutes: the cluster's objects stay level, so a slope of
			// RSS is the replicas' own, not the soak's Jobs piling up (as it was at c31b576).
			// Not sooner: a Job that finished and went while the benchmark's watch of the Jobs
			// was away (an API server too busy to answer, as at 9625de8, where 414 were lost
			// so to the tally with a TTL of 60 s) is never seen finished.
			ttl: ptr.To[int32](300)}
		r, err := l.run(ctx)
		loadErr = err
		loadDone <- r
	}()
	victim := len(e.replicas) - 1
	for k := 1; time.Duration(k)*sc.killEvery < sc.soak; k++ {
		select {
		case <-ctx.Done():
			return res
		case <-time.After(time.Until(start.Add(time.Duration(k) * sc.killEvery))):
		}
		r := e.replicas[victim]
		st, err := r.Status(ctx)
		if err != nil {
			res.errs = append(res.errs, fmt.Errorf("soak kill %d: %w", k, err))
			continue
		}
		held := shard.NewSlotSet(st.Held)
		if err := r.Signal(syscall.SIGKILL); err != nil {
			res.errs = append(res.errs, fmt.Errorf("soak kill %d: %w", k, err))
			continue
		}
		at := time.Now()
		d, err := e.probe(ctx, at, probeNS, probeNames(probeNS, fmt.Sprintf("soak%d", k), sc.probes, func(key string) bool { return held.HasKey(key, st.Slots) }))
		res.kills = append(res.kills, d)
		if err != nil {
			res.errs = append(res.errs, fmt.Errorf("soak kill %d: %w", k, err))
		}
		for deadline := time.Now().Add(10 * time.Second); !r.Exited() && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		e.setReplica(victim, e.startReplica(b, r.ID))
	}
	r := <-loadDone
	res.duplicates = r.duplicates
	if loadErr != nil {
		res.errs = append(res.errs, fmt.Errorf("soak load: %w", loadErr))
	}
	phases, _, err := waitJobsFinished(ctx, jw, res.jobs, sc.waitLimit)
	res.finished = phases
	if err != nil {
		res.errs = append(res.errs, fmt.Errorf("soak: %w", err))
	}
	if phases[batch.Completed] != res.jobs {
		res.errs = append(res.errs, fmt.Errorf("soak: %d of %d Jobs Completed (%v)", phases[batch.Completed], res.jobs, phases))
	}
	warm := start.Add(min(sc.killEvery, sc.soak/2))
	for _, r := range e.replicas[:victim] {
		res.rssSlope[r.ID] = smp.slopeOf("soak", r.ID, warm, func(s rssSample) map[string]float64 { return s.rss })
		res.gorSlope[r.ID] = smp.slopeOf("soak", r.ID, warm, func(s rssSample) map[string]float64 { return s.gor })
		res.rssFrom[r.ID], res.to[r.ID] = smp.meanBetween(r.ID, warm, warm.Add(5*time.Minute)), smp.meanBetween(r.ID, time.Now().Add(-5*time.Minute), time.Now())
	}
	return res
}

// meanBetween is the mean RSS of name over the samples taken in [from, to).
func (s *sampler) meanBetween(name string, from, to time.Time) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum, n := 0.0, 0
	for _, smp := range s.samples {
		if v, ok := smp.rss[name]; ok && !smp.at.Before(from) && smp.at.Before(to) {
			sum, n = sum+v, n+1
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// medianWindowP99 is the median of the windows' p99: what the steady load
// sees once a start's backlog, which only the first windows meet, is past.
func medianWindowP99(ws []window) time.Duration {
	var p99s []time.Duration
	for _, w := range ws {
		if len(w.latencies) > 0 {
			p99s = append(p99s, percentile(w.latencies, 99))
		}
	}
	return median(p99s)
}

// median is the 50th percentile of ds, in any order (0 for none).
func median(ds []time.Duration) time.Duration {
	return percentile(slices.Sorted(slices.Values(ds)), 50)
}
