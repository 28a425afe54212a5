package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Schedulers a run can use: the stand-in of e2e/standin in the benchmark
// process, or ringfire's own gang scheduler in the replicas.
const (
	schedulerStandIn  = "standin"
	schedulerRingfire = "ringfire"
)

// config is what one run of the benchmark measures, read from the
// environment so that `go test -bench` needs no custom flags.
type config struct {
	replicaArgs []string      // RINGFIRE_BENCH_REPLICA_ARGS: more `ringfire run` flags, space-separated (say "--status-coalesce 5s")
	jobs        []int         // RINGFIRE_BENCH_JOBS: Job counts, one sub-benchmark each ("1000")
	taskPods    int           // RINGFIRE_BENCH_TASK_PODS: replicas of the one task of each Job (10)
	replicas    []int         // RINGFIRE_BENCH_REPLICAS: ringfire replica counts ("1,3")
	schedulers  []string      // RINGFIRE_BENCH_SCHEDULER: "ringfire", "standin", one sub-benchmark each ("ringfire,standin")
	qps         int           // RINGFIRE_BENCH_QPS: each replica's --kube-api-qps (200, as e2e/stack; 0: no flag, ringfire's 200)
	burst       int           // RINGFIRE_BENCH_BURST: each replica's --kube-api-burst (400, as e2e/stack; 0: no flag, ringfire's 400)
	workers     int           // RINGFIRE_BENCH_WORKERS: each replica's --workers (4, as e2e/stack; 0: no flag, ringfire's 8)
	nodes       int           // RINGFIRE_BENCH_NODES: KWOK nodes (20)
	nodePods    int           // RINGFIRE_BENCH_NODE_PODS: pods each node takes (1000)
	creators    int           // RINGFIRE_BENCH_CREATORS: goroutines creating Jobs in a burst (8)
	podRun      time.Duration // RINGFIRE_BENCH_POD_RUN: how long each pod runs on its KWOK node (1h: past the measurement)
	rate        int           // RINGFIRE_BENCH_RATE: Jobs created per second, steadily; 0 for a burst of RINGFIRE_BENCH_JOBS
	rateFor     time.Duration // RINGFIRE_BENCH_RATE_FOR: how long Jobs are created at that rate (1m)
	waitLimit   time.Duration // RINGFIRE_BENCH_WAIT: bound on first create → all pods (10m)
	settle      time.Duration // RINGFIRE_BENCH_SETTLE: bound on all pods → every Job done and the replicas quiet (10m)
	quiet       time.Duration // RINGFIRE_BENCH_QUIET: no write for this long, twice, before counts are taken (3s)
	logDir      string        // RINGFIRE_BENCH_LOGS: keep the replicas' logs there (default: dropped)
	logLevel    string        // RINGFIRE_BENCH_LOG_LEVEL: the replicas' --log-level (warn)
	revision    string        // the commit ringfire was built from (procs.Revision)
}

// defaultWorkers is `ringfire run`'s --workers default (cmd/ringfire/run.go; 3 before f29ea3d),
// used to tell how busy the workers were when the benchmark passes no flag.
const defaultWorkers = 8

func configFromEnv(b *testing.B) config {
	b.Helper()
	c := config{
		jobs:        envInts(b, "RINGFIRE_BENCH_JOBS", "1000"),
		taskPods:    envInts(b, "RINGFIRE_BENCH_TASK_PODS", "10")[0],
		replicas:    envInts(b, "RINGFIRE_BENCH_REPLICAS", "1,3"),
		schedulers:  envSchedulers(b),
		qps:         envCount(b, "RINGFIRE_BENCH_QPS", 200),
		burst:       envCount(b, "RINGFIRE_BENCH_BURST", 400),
		workers:     envCount(b, "RINGFIRE_BENCH_WORKERS", 4),
		nodes:       envInts(b, "RINGFIRE_BENCH_NODES", "20")[0],
		nodePods:    envInts(b, "RINGFIRE_BENCH_NODE_PODS", "1000")[0],
		creators:    envInts(b, "RINGFIRE_BENCH_CREATORS", "8")[0],
		podRun:      envDuration(b, "RINGFIRE_BENCH_POD_RUN", time.Hour),
		rate:        envCount(b, "RINGFIRE_BENCH_RATE", 0),
		rateFor:     envDuration(b, "RINGFIRE_BENCH_RATE_FOR", time.Minute),
		waitLimit:   envDuration(b, "RINGFIRE_BENCH_WAIT", 10*time.Minute),
		settle:      envDuration(b, "RINGFIRE_BENCH_SETTLE", 10*time.Minute),
		quiet:       envDuration(b, "RINGFIRE_BENCH_QUIET", defaultQuiet),
		logDir:      os.Getenv("RINGFIRE_BENCH_LOGS"),
		logLevel:    os.Getenv("RINGFIRE_BENCH_LOG_LEVEL"),
		replicaArgs: strings.Fields(os.Getenv("RINGFIRE_BENCH_REPLICA_ARGS")),
	}
	if c.logLevel == "" {
		c.logLevel = "warn"
	}
	if c.rate > 0 {
		// A steady rate replaces the burst sizes: one sub-benchmark of
		// rate × duration Jobs.
		c.jobs = []int{c.rate * int(c.rateFor/time.Second)}
		if c.jobs[0] == 0 {
			b.Fatalf("RINGFIRE_BENCH_RATE_FOR=%v: want at least a second", c.rateFor)
		}
	}
	for _, jobs := range c.jobs {
		if jobs*c.taskPods > c.nodes*c.nodePods {
			b.Fatalf("%d jobs × %d pods do not fit on %d nodes of %d pods: raise RINGFIRE_BENCH_NODES or RINGFIRE_BENCH_NODE_PODS",
				jobs, c.taskPods, c.nodes, c.nodePods)
		}
	}
	return c
}

// envInts parses a comma-separated list of positive integers from the
// environment variable name, or from def when it is unset.
func envInts(b *testing.B, name, def string) []int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		v = def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want positive integers separated by commas", name, v)
		}
		out = append(out, n)
	}
	return out
}

// envCount parses one integer ≥ 0 from the environment variable name, or
// returns def when it is unset. For a replica flag, 0 means "pass no flag":
// the replica runs with ringfire's default.
func envCount(b *testing.B, name string, def int) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		b.Fatalf("%s=%q: want an integer ≥ 0", name, v)
	}
	return n
}

// envDuration parses a positive Go duration from the environment variable
// name, or returns def when it is unset.
func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("%s=%q: want a positive Go duration such as 10m", name, v)
	}
	return d
}

// envSchedulers parses RINGFIRE_BENCH_SCHEDULER.
func envSchedulers(b *testing.B) []string {
	b.Helper()
	v := os.Getenv("RINGFIRE_BENCH_SCHEDULER")
	if v == "" {
		v = schedulerRingfire + "," + schedulerStandIn
	}
	var out []string
	for _, f := range strings.Split(v, ",") {
		switch s := strings.TrimSpace(f); s {
		case schedulerRingfire, schedulerStandIn:
			out = append(out, s)
		default:
			b.Fatalf("RINGFIRE_BENCH_SCHEDULER=%q: want %q or %q, separated by commas", v, schedulerRingfire, schedulerStandIn)
		}
	}
	return out
}

// flagOrDefault prints a replica flag's value, or that the flag is not passed.
func flagOrDefault(n int) string {
	if n == 0 {
		return "default"
	}
	return strconv.Itoa(n)
}

// podsEnd reports whether the pods end, and their Jobs complete, within the
// bound the benchmark waits for that after the last pod is created.
func (c config) podsEnd() bool { return c.podRun < c.settle }

func (c config) String() string {
	load := fmt.Sprintf("%d creators", c.creators)
	if c.rate > 0 {
		load = fmt.Sprintf("%d Jobs/s for %v", c.rate, c.rateFor)
	}
	extra := ""
	if len(c.replicaArgs) > 0 {
		extra = fmt.Sprintf(" %s", strings.Join(c.replicaArgs, " "))
	}
	return fmt.Sprintf("task pods %d running %v, replica QPS %s burst %s workers %s%s, %d nodes × %d pods, %s",
		c.taskPods, c.podRun, flagOrDefault(c.qps), flagOrDefault(c.burst), flagOrDefault(c.workers), extra, c.nodes, c.nodePods, load)
}
