package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// config is what one run of the benchmark measures, read from the
// environment so that `go test -bench` needs no custom flags.
type config struct {
	jobs       []int         // RINGFIRE_BENCH_JOBS: Job counts, one sub-benchmark each ("1000")
	taskPods   int           // RINGFIRE_BENCH_TASK_PODS: replicas of the one task of each Job (10)
	replicas   []int         // RINGFIRE_BENCH_REPLICAS: ringfire replica counts ("1,3")
	qps        int           // RINGFIRE_BENCH_QPS: each replica's --kube-api-qps (200, as e2e/stack)
	burst      int           // RINGFIRE_BENCH_BURST: each replica's --kube-api-burst (400, as e2e/stack)
	workers    int           // RINGFIRE_BENCH_WORKERS: each replica's --workers (4, as e2e/stack)
	nodes      int           // RINGFIRE_BENCH_NODES: KWOK nodes (20)
	nodePods   int           // RINGFIRE_BENCH_NODE_PODS: pods each node takes (1000)
	creators   int           // RINGFIRE_BENCH_CREATORS: goroutines creating Jobs (8)
	waitLimit  time.Duration // RINGFIRE_BENCH_WAIT: bound on first create → all pods (10m)
	logDir     string        // RINGFIRE_BENCH_LOGS: keep the replicas' logs there (default: dropped)
	logLevel   string        // RINGFIRE_BENCH_LOG_LEVEL: the replicas' --log-level (warn)
	podRunTime string        // how long each pod runs on its KWOK node: past the measurement
}

func configFromEnv(b *testing.B) config {
	b.Helper()
	c := config{
		jobs:       envInts(b, "RINGFIRE_BENCH_JOBS", "1000"),
		taskPods:   envInts(b, "RINGFIRE_BENCH_TASK_PODS", "10")[0],
		replicas:   envInts(b, "RINGFIRE_BENCH_REPLICAS", "1,3"),
		qps:        envInts(b, "RINGFIRE_BENCH_QPS", "200")[0],
		burst:      envInts(b, "RINGFIRE_BENCH_BURST", "400")[0],
		workers:    envInts(b, "RINGFIRE_BENCH_WORKERS", "4")[0],
		nodes:      envInts(b, "RINGFIRE_BENCH_NODES", "20")[0],
		nodePods:   envInts(b, "RINGFIRE_BENCH_NODE_PODS", "1000")[0],
		creators:   envInts(b, "RINGFIRE_BENCH_CREATORS", "8")[0],
		waitLimit:  10 * time.Minute,
		podRunTime: "1h",
		logDir:     os.Getenv("RINGFIRE_BENCH_LOGS"),
		logLevel:   os.Getenv("RINGFIRE_BENCH_LOG_LEVEL"),
	}
	if c.logLevel == "" {
		c.logLevel = "warn"
	}
	if v := os.Getenv("RINGFIRE_BENCH_WAIT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("RINGFIRE_BENCH_WAIT=%q: want a positive Go duration such as 10m", v)
		}
		c.waitLimit = d
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

func (c config) String() string {
	return fmt.Sprintf("task pods %d, replica QPS %d burst %d workers %d, %d nodes × %d pods, %d creators",
		c.taskPods, c.qps, c.burst, c.workers, c.nodes, c.nodePods, c.creators)
}
