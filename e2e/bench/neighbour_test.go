package bench

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
)

// BenchmarkNoisyNeighbour measures what one namespace's heavy work costs another's on the
// same replicas: namespace "noisy" holds RestartJob-ed large Jobs (20 × 1,000 pods: 20,000
// deletes and 20,000 creates) while namespace "quiet" creates 5 Jobs a second × 10 pods for
// a minute, the Commands issued 10 s into it. It reports the quiet Jobs' create → all pods
// latency (p50, p99, max, and p99 of the Jobs created while the restarts were in flight), with
// the replicas' fair share between namespaces (the dispatchers' fair ready queues and
// shard.FairLimiter) and without it (--fair-namespaces=false), each on a control plane of
// its own, 3 replicas and the stand-in scheduler.
//
//	RINGFIRE_TOOLS_BIN=$(e2e/tools/build.sh | tail -1) RINGFIRE_E2E=1 \
//	  go test -run '^$' -bench NoisyNeighbour -benchtime=1x -timeout 60m ./e2e/bench/
//
// RINGFIRE_NEIGHBOUR_JOBS and RINGFIRE_NEIGHBOUR_PODS size the noisy namespace (20, 1000),
// RINGFIRE_NEIGHBOUR_FAIR picks the sub-benchmarks ("on,off").
func BenchmarkNoisyNeighbour(b *testing.B) {
	cluster.RequireTools(b)
	quietClientGo()
	c := configFromEnv(b)
	bigJobs := envCount(b, "RINGFIRE_NEIGHBOUR_JOBS", 20)
	bigPods := envCount(b, "RINGFIRE_NEIGHBOUR_PODS", 1000)
	c.nodes = max(c.nodes, (bigJobs*bigPods+quietRate*int(quietFor/time.Second)*quietPods)/c.nodePods+1)
	bin := procs.Build(b)
	c.revision = procs.Revision()
	b.Logf("%s; %d CPUs", c, runtime.NumCPU())
	modes := strings.Split(envOr("RINGFIRE_NEIGHBOUR_FAIR", "on,off"), ",")
	for _, mode := range modes {
		b.Run(fmt.Sprintf("fair=%s/noisy=%dx%d/quiet=%dper-s-x%d", mode, bigJobs, bigPods, quietRate, quietPods), func(b *testing.B) {
			mc := c
			mc.replicaArgs = append(slices.Clone(c.replicaArgs), "--fair-namespaces="+fmt.Sprint(mode == "on"))
			benchNeighbour(b, mc, bin, bigJobs, bigPods)
		})
	}
}

// The quiet namespace's load: quietRate Jobs a second of quietPods pods for quietFor, the
// noisy namespace's RestartJob Commands restartAfter into it.
const (
	quietRate    = 5
	quietPods    = 10
	quietFor     = time.Minute
	restartAfter = 10 * time.Second
)

func benchNeighbour(b *testing.B, c config, bin string, bigJobs, bigPods int) {
	e := startEnv(b, c, bin, schedulerStandIn, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := makeNamespaces(ctx, e.kube, []string{"noisy", "quiet"}, time.Minute); err != nil {
		b.Fatal(err)
	}
	log := func(string, ...any) {}
	if testing.Verbose() {
		log = b.Logf
	}
	noisy := load{kube: e.kube, volcano: e.volcano, namespace: "noisy", jobs: bigJobs, taskPods: bigPods,
		creators: c.creators, podRun: c.podRun, limit: c.waitLimit, log: log}
	res, err := noisy.run(ctx)
	if err != nil {
		b.Fatalf("the noisy namespace's Jobs: %v", err)
	}
	b.Logf("noisy: %d pods of %d Jobs in %.1fs", res.pods, bigJobs, res.allPods.Seconds())

	quiet := load{kube: e.kube, volcano: e.volcano, namespace: "quiet", jobs: quietRate * int(quietFor/time.Second), taskPods: quietPods,
		rate: quietRate, podRun: c.podRun, limit: quietFor + c.waitLimit, log: log}
	type outcome struct {
		res loadResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		r, err := quiet.run(ctx)
		done <- outcome{r, err}
	}()
	time.Sleep(restartAfter)
	restartAt := time.Now()
	for i := range bigJobs {
		if err := restartJob(ctx, e, "noisy", jobName(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("RestartJob issued on %d Jobs in %.1fs", bigJobs, time.Since(restartAt).Seconds())
	restartsDone := waitRestarted(ctx, e, "noisy", bigJobs, bigPods, restartAt, c.waitLimit)
	out := <-done
	if out.err != nil {
		b.Fatalf("the quiet namespace's Jobs: %v", out.err)
	}
	q := out.res

	// The quiet Jobs created while the restarts were in flight.
	var during []time.Duration
	for i, at := range q.created {
		if !at.Before(restartAt) && at.Before(restartAt.Add(restartsDone)) && !q.done[i].IsZero() {
			during = append(during, q.done[i].Sub(at))
		}
	}
	slices.Sort(during)
	p50, p99, worst := percentile(q.jobLatency, 50), percentile(q.jobLatency, 99), percentile(q.jobLatency, 100)
	b.ReportMetric(p50.Seconds(), "s-quiet-p50")
	b.ReportMetric(p99.Seconds(), "s-quiet-p99")
	b.ReportMetric(worst.Seconds(), "s-quiet-max")
	b.ReportMetric(percentile(during, 99).Seconds(), "s-quiet-p99-during-restarts")
	b.ReportMetric(restartsDone.Seconds(), "s-restarts")
	fmt.Printf("--- %s (ringfire at %s)\n"+
		"noisy: %d Jobs x %d pods restarted (every pod deleted and made again) in %.1fs after the Commands\n"+
		"quiet: %d Jobs x %d pods at %d/s; create -> all pods p50 %.2fs, p99 %.2fs, max %.2fs; "+
		"%d created during the restarts: p99 %.2fs\n",
		b.Name(), c.revision, bigJobs, bigPods, restartsDone.Seconds(),
		quiet.jobs, quietPods, quietRate, p50.Seconds(), p99.Seconds(), worst.Seconds(),
		len(during), percentile(during, 99).Seconds())
}

// restartJob issues a RestartJob Command on the Job.
func restartJob(ctx context.Context, e *env, ns, name string) error {
	job, err := e.volcano.BatchV1alpha1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cmd := &bus.Command{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restart-" + name},
		Action:     string(bus.RestartJobAction),
		TargetObject: &metav1.OwnerReference{
			APIVersion: batch.SchemeGroupVersion.String(), Kind: "Job", Name: name, UID: job.UID,
		},
	}
	_, err = e.volcano.BusV1alpha1().Commands(ns).Create(ctx, cmd, metav1.CreateOptions{})
	return err
}

// waitRestarted waits until every Job of ns has retried once and has its pods again, and
// returns how long after since that took (limit if it did not).
func waitRestarted(ctx context.Context, e *env, ns string, jobs, pods int, since time.Time, limit time.Duration) time.Duration {
	deadline := since.Add(limit)
	for time.Now().Before(deadline) {
		list, err := e.volcano.BatchV1alpha1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			n := 0
			for _, j := range list.Items {
				st := j.Status
				if st.RetryCount >= 1 && st.Pending+st.Running+st.Succeeded >= int32(pods) && st.Terminating == 0 {
					n++
				}
			}
			if n == jobs {
				return time.Since(since)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	return limit
}
