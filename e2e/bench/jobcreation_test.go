package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
)

// BenchmarkJobCreation measures how fast ringfire turns Jobs into pods, and
// how many API writes it spends on them: the time from the first Job create
// to the last of their pods seen by a watch on the API server, and the API
// server's own count of writes per Job until every Job is done and the
// replicas are quiet. One sub-benchmark per scheduler, Job count and
// replica count of the configuration (default ringfire's gang scheduler and
// the stand-in, 1,000 Jobs × 10 pods, with 1 and with 3 replicas), each on
// a control plane of its own. Run it with -benchtime=1x: every iteration
// adds its Jobs to the same cluster.
func BenchmarkJobCreation(b *testing.B) {
	cluster.RequireTools(b)
	quietClientGo()
	c := configFromEnv(b)
	bin := procs.Build(b)
	c.revision = procs.Revision()
	b.Logf("%s; %d CPUs", c, runtime.NumCPU())
	for _, scheduler := range c.schedulers {
		for _, jobs := range c.jobs {
			for _, n := range c.replicas {
				name := fmt.Sprintf("scheduler=%s/jobs=%dx%d/replicas=%d", scheduler, jobs, c.taskPods, n)
				if c.rate > 0 {
					name = fmt.Sprintf("scheduler=%s/jobs=%dx%d-at-%dper-s/replicas=%d", scheduler, jobs, c.taskPods, c.rate, n)
				}
				b.Run(name, func(b *testing.B) {
					benchJobCreation(b, c, bin, scheduler, jobs, n)
				})
			}
		}
	}
}

// quietClientGo drops the client-go log lines of the benchmark's own
// clients (the stand-in's watches end with warnings at teardown) unless
// $RINGFIRE_E2E_DEBUG is set.
func quietClientGo() {
	if os.Getenv("RINGFIRE_E2E_DEBUG") != "" {
		return
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}

func benchJobCreation(b *testing.B, c config, bin, scheduler string, jobs, replicas int) {
	e := startEnv(b, c, bin, scheduler, replicas)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := measure(ctx, b, e, c, jobs)

	// The summary goes to stdout: a benchmark's log is cut at ten lines.
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s (%s; ringfire at %s)\n", b.Name(), c, c.revision)
	if m.loadErr != nil {
		// Still report what was measured: a run too slow for the bound is a
		// result too.
		b.Errorf("load: %v", m.loadErr)
		fmt.Fprintf(&out, "load failed: %v\n", m.loadErr)
	} else {
		out.WriteString(reportLoad(b, m.res, jobs))
		if c.rate > 0 {
			table, worst := reportWindows(windows(m.res, rateWindow), rateWindow)
			b.ReportMetric(worst.Seconds(), "s-window-p99-worst")
			out.WriteString(table)
		}
	}
	if m.res.duplicates > 0 {
		b.Errorf("%d pod names were added more than once", m.res.duplicates)
	}
	out.WriteString(reportSettle(b, m, c, e.replicas))
	out.WriteString(reportWrites(b, m))
	if c.qps > 0 {
		b.ReportMetric(float64(c.qps), "replica-QPS")
	}
	if c.burst > 0 {
		b.ReportMetric(float64(c.burst), "replica-burst")
	}
	b.ReportMetric(m.cpu[string(cluster.APIServer)], "cpu-s-apiserver")
	b.ReportMetric(sumReplicas(m.cpu, e.replicas), "cpu-s-replicas")
	workers := c.workers
	if workers == 0 {
		workers = defaultWorkers
	}
	out.WriteString(reportReplicas(ctx, b, e.replicas, m, float64(workers)*m.countedAt.Seconds()))
	out.WriteString(reportCPU(b, m))
	fmt.Print(out.String())
}

// rateWindow is the stretch of Job creation time over which a steady load's
// latencies are summed up.
const rateWindow = 5 * time.Second

// reportLoad reports the throughput and per-Job latency as metrics, and
// returns them as lines for the summary.
func reportLoad(b *testing.B, res loadResult, jobs int) string {
	secs := res.allPods.Seconds()
	p50, p99 := percentile(res.jobLatency, 50).Seconds(), percentile(res.jobLatency, 99).Seconds()
	b.ReportMetric(float64(jobs)/secs, "jobs/s")
	b.ReportMetric(float64(res.pods)/secs, "pods/s")
	b.ReportMetric(secs, "s-to-all-pods")
	b.ReportMetric(secs, "s-first-job-to-last-pod") // the same, by the name issue 9 uses
	b.ReportMetric(res.jobsCreated.Seconds(), "s-to-all-jobs-created")
	b.ReportMetric(p50, "s-job-p50")
	b.ReportMetric(p99, "s-job-p99")
	return fmt.Sprintf("%d pods of %d Jobs in %.1fs (newest creationTimestamp %.0fs after the first create, ±1s): %.1f jobs/s, %.0f pods/s\n"+
		"Jobs created in %.1fs; per Job, create → last pod seen: p50 %.1fs, p99 %.1fs, max %.1fs\n",
		res.pods, jobs, secs, res.lastCreated.Sub(res.start).Seconds(), float64(jobs)/secs, float64(res.pods)/secs,
		res.jobsCreated.Seconds(), p50, p99, percentile(res.jobLatency, 100).Seconds())
}

// reportReplicas reports each replica's peak memory and share of the pods as
// metrics, and returns a table of them with its CPU time and reconciles.
// workerSeconds is what the replica's workers had during the load: the
// share of it spent in reconciles tells whether the workers were the limit.
func reportReplicas(ctx context.Context, b *testing.B, replicas []*replicaProcess, m measurement, workerSeconds float64) string {
	created, err := podsCreated(ctx, replicas, m.res.pods, 10*time.Second)
	if err != nil {
		b.Error(err)
	}
	var t strings.Builder
	t.WriteString("replicas (RSS from /proc/<pid>/status, peak = VmHWM; heap = go_memstats_heap_inuse_bytes, sampled each second, peak at s after the first create;\n" +
		"CPU and API writes (its own rest_client_requests_total: POST, PUT, PATCH, DELETE) from the first create to the final counts; workers busy over that time;\n" +
		"limiter s = seconds its requests waited on its client-side rate limiter, summed over requests, since it started;\n" +
		"Job status writes since it started: phase (a new phase, reason or other state) / counts (pod counts only) / deferred (count changes held back by --status-coalesce); lapsed = create and delete expectations that lapsed unmet):\n")
	fmt.Fprintf(&t, "%-4s %8s %9s %9s %7s %6s %9s %6s %6s %7s %11s %10s %7s %7s %14s %12s %s\n",
		"", "idle RSS", "peak RSS", "peak heap", "at", "CPU s", "CPU s/1k", "pods", "slots", "writes", "limiter s", "reconciles", "errors", "retries", "mean reconcile", "workers busy", "status writes")
	allPods := 0.0
	for _, r := range replicas {
		allPods += created[r.ID]
	}
	b.ReportMetric(1000*sumReplicas(m.cpu, replicas)/max(allPods, 1), "cpu-s-replicas-per-1k-pods")
	for _, r := range replicas {
		u, err := readProc(r.PID())
		if err != nil {
			b.Errorf("replica %s: %v", r.ID, err)
			continue
		}
		slots, _ := r.Metric(ctx, "ringfire_slots_owned")
		reconciles, _ := r.Metric(ctx, "workqueue_work_duration_seconds_count")
		reconcileSeconds, _ := r.Metric(ctx, "workqueue_work_duration_seconds_sum")
		errs, _ := r.Metric(ctx, "ringfire_workqueue_errors_total")
		retries, _ := r.Metric(ctx, "workqueue_retries_total")
		// Time its requests waited on its own client-side limiter
		// (--kube-api-qps, --kube-api-burst), summed over requests, since
		// it started: whether the limiter held it back.
		limiterWait, _ := r.Metric(ctx, "rest_client_rate_limiter_duration_seconds_sum")
		heap, heapAt := r.sampledPeakHeap()
		at := 0.0
		if !m.res.start.IsZero() {
			at = heapAt.Sub(m.res.start).Seconds()
		}
		b.ReportMetric(u.peakRSS/mib, "MiB-peak-RSS-"+r.ID)
		b.ReportMetric(heap/mib, "MiB-peak-heap-"+r.ID)
		b.ReportMetric(created[r.ID], "pods-"+r.ID)
		b.ReportMetric(m.cpu[r.ID], "cpu-s-"+r.ID)
		perK := 1000 * m.cpu[r.ID] / max(created[r.ID], 1)
		b.ReportMetric(perK, "cpu-s-per-1k-pods-"+r.ID)
		writes := m.after.perReplica[r.ID].minus(m.before.perReplica[r.ID]).writes()
		fmt.Fprintf(&t, "%-4s %5.0fMiB %6.0fMiB %6.0fMiB %6.0fs %6.1f %9.2f %6.0f %6.0f %7.0f %11.1f %10.0f %7.0f %7.0f %12.0fms %11.0f%% %s\n",
			r.ID, m.idleRSS[r.ID]/mib, u.peakRSS/mib, heap/mib, at, m.cpu[r.ID], perK, created[r.ID], slots, writes, limiterWait,
			reconciles, errs, retries, 1000*reconcileSeconds/max(reconciles, 1), 100*reconcileSeconds/max(workerSeconds, 1), statusWrites(ctx, r))
	}
	return t.String()
}

// statusWrites is the replica's Job status writes by kind, and the count
// changes it held back, as "phase/counts/deferred", and its lapsed expectations.
func statusWrites(ctx context.Context, r *replicaProcess) string {
	phase, _ := r.Metric(ctx, `ringfire_job_status_writes_total{kind="phase"}`)
	counts, _ := r.Metric(ctx, `ringfire_job_status_writes_total{kind="counts"}`)
	deferred, _ := r.Metric(ctx, "ringfire_job_status_writes_deferred_total")
	lapsed, _ := r.Metric(ctx, "ringfire_expectations_lapsed_total")
	return fmt.Sprintf("%.0f/%.0f/%.0f, %.0f lapsed", phase, counts, deferred, lapsed)
}

func sumReplicas(cpu map[string]float64, replicas []*replicaProcess) float64 {
	sum := 0.0
	for _, r := range replicas {
		sum += cpu[r.ID]
	}
	return sum
}

// reportCPU lists the CPU seconds each process spent during the load, and
// what the rest of the machine took: CPU the control plane and the replicas
// did not get, the caveat of a shared machine.
func reportCPU(b *testing.B, m measurement) string {
	names := make([]string, 0, len(m.cpu))
	ours := 0.0
	for name, v := range m.cpu {
		names = append(names, name)
		ours += v
	}
	sort.Slice(names, func(i, j int) bool { return m.cpu[names[i]] > m.cpu[names[j]] })
	var t strings.Builder
	t.WriteString("CPU seconds from the first create to the final counts:")
	for _, name := range names {
		fmt.Fprintf(&t, " %s %.1f;", name, m.cpu[name])
	}
	t.WriteString("\n")
	if m.machineErr == nil {
		others := max(0, m.machine.busy-ours)
		b.ReportMetric(others, "cpu-s-others")
		fmt.Fprintf(&t, "machine: %d CPUs, %.0f of %.0f CPU-s busy (%.0f%%) over that time: %.0f by the processes above, %.0f by others; load average %s → %s\n",
			runtime.NumCPU(), m.machine.busy, m.machine.total, 100*m.machine.busy/max(m.machine.total, 1), ours, others, m.loadAvg[0], m.loadAvg[1])
	}
	return t.String()
}

// podsCreated reads each replica's count of pods created, waiting up to
// limit for the counts to add up to want: a replica counts a pod once its
// create call returns, which may be after the watch saw the pod.
func podsCreated(ctx context.Context, replicas []*replicaProcess, want int, limit time.Duration) (map[string]float64, error) {
	deadline := time.Now().Add(limit)
	for {
		created, sum := map[string]float64{}, 0.0
		var errs []error
		for _, r := range replicas {
			n, err := r.Metric(ctx, "ringfire_job_pods_created_total")
			errs = append(errs, err)
			created[r.ID], sum = n, sum+n
		}
		if err := errors.Join(errs...); err != nil || int(sum) == want || time.Now().After(deadline) {
			if err == nil && int(sum) != want {
				err = fmt.Errorf("replicas count %.0f pods created, the watch saw %d", sum, want)
			}
			return created, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
