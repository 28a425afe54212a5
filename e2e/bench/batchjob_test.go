package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/internal/localetcd"
)

// batchRun is one controller setup of BenchmarkBatchJobs.
type batchRun struct {
	name string
	// kcmArgs are kube-controller-manager's extra flags; replicas > 0 runs ringfire and marks
	// the Jobs spec.managedBy ringfire.io/job-controller.
	kcmArgs  []string
	replicas int
}

// BenchmarkBatchJobs creates RINGFIRE_BENCH_JOBS (1000) batch/v1 Jobs of
// RINGFIRE_BENCH_TASK_PODS (10) pods each, all at once, and measures until
// every pod exists: once under kube-controller-manager's Job controller at its
// defaults (--kube-api-qps 20, --kube-api-burst 30, --concurrent-job-syncs 5),
// once at raised limits (200, 400, 50), and once under ringfire's replicas
// (RINGFIRE_BENCH_REPLICAS, 3; each at the benchmark's --kube-api-qps), each
// on a fresh control plane. It reports the time to all pods, the API writes
// per Job the controller made meanwhile (pod creates, Job status writes,
// Event creates and patches, seen by watches, so both controllers are counted
// alike), the writes the API server refused with 409 (apiserver_request_total)
// and the CPU seconds of the controller's processes (the whole
// kube-controller-manager; ringfire's replicas). Pods run past the
// measurement (no finalizer removal counted); writes are counted until they
// have been quiet for 3 s after the last pod (the recorders send Events late). RINGFIRE_BENCH_BATCH_RUNS picks
// runs by name (kcm-defaults,kcm-raised,ringfire).
//
//	make tools
//	RINGFIRE_TOOLS_BIN=... RINGFIRE_E2E=1 go test -run '^$' -bench BatchJobs -benchtime 1x -timeout 90m ./e2e/bench/
func BenchmarkBatchJobs(b *testing.B) {
	c := configFromEnv(b)
	bin := procs.Build(b)
	replicas := c.replicas[len(c.replicas)-1]
	runs := []batchRun{
		{name: "kcm-defaults", kcmArgs: []string{"--kube-api-qps=20", "--kube-api-burst=30", "--concurrent-job-syncs=5"}},
		{name: "kcm-raised", kcmArgs: []string{"--kube-api-qps=200", "--kube-api-burst=400", "--concurrent-job-syncs=50"}},
		{name: "ringfire", replicas: replicas, kcmArgs: []string{"--kube-api-qps=200", "--kube-api-burst=400"}},
	}
	pick := os.Getenv("RINGFIRE_BENCH_BATCH_RUNS")
	for _, run := range runs {
		if pick != "" && !strings.Contains(","+pick+",", ","+run.name+",") {
			continue
		}
		b.Run(fmt.Sprintf("%s/jobs=%d/pods=%d", run.name, c.jobs[0], c.taskPods), func(b *testing.B) {
			for range b.N {
				benchBatchJobs(b, c, bin, run)
			}
		})
	}
}

func benchBatchJobs(b *testing.B, c config, bin string, run batchRun) {
	log := hclog.New(&hclog.LoggerOptions{Name: "bench", Level: hclog.Warn, Output: os.Stderr})
	logDir, clusterDir := dirs(b, c)
	cl := cluster.StartForTest(b, cluster.Options{
		Nodes: c.nodes, NodePods: strconv.Itoa(c.nodePods), Dir: clusterDir, Logger: log.Named("cluster"),
		ControllerManagerArgs: run.kcmArgs,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kube := kubernetes.NewForConfigOrDie(counted(cl.RESTConfig(), newClientCounter()))
	pids := map[string]int{}
	if pid, err := readPIDFile(filepath.Join(cl.Dir(), string(cluster.ControllerManager)+".pid")); err == nil && run.replicas == 0 {
		pids["kube-controller-manager"] = pid
	}
	if run.replicas > 0 {
		if err := crds.Install(ctx, cl.RESTConfig()); err != nil {
			b.Fatal(err)
		}
		ring := localetcd.StartForTest(b)
		args := procs.Args{
			Bin: bin, Etcd: ring.Endpoint(), Kubeconfig: cl.Kubeconfig(), LogDir: logDir,
			LogLevel: c.logLevel, QPS: c.qps, Burst: c.burst, Workers: c.workers,
			Controllers: "job,queue,podgroup,batchjob", Extra: c.replicaArgs,
		}
		var reps []*procs.Replica
		b.Cleanup(func() { procs.StopAll(b, reps) })
		for i := range run.replicas {
			r := procs.Start(b, args, fmt.Sprintf("r%d", i))
			reps = append(reps, r)
			pids[r.ID] = r.PID()
		}
		if err := procs.WaitRing(ctx, reps, time.Minute); err != nil {
			b.Fatal(err)
		}
	}

	const ns = "default"
	jobs, perJob := c.jobs[0], c.taskPods
	want := jobs * perJob
	var writes writeWatch
	writes.start(ctx, b, kube, ns)
	before := refusedWrites(ctx, b, cl)
	cpu0 := cpuSeconds(pids)
	start := time.Now()
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range c.creators {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= jobs {
					return
				}
				job := batchBenchJob(ns, fmt.Sprintf("bj-%05d", i), perJob, c.podRun, run.replicas > 0)
				if _, err := kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
					b.Errorf("create %s: %v", job.Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	created := time.Since(start)
	deadline := time.Now().Add(c.waitLimit)
	for writes.pods() < want {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d pods after %v", writes.pods(), want, c.waitLimit)
		}
		time.Sleep(50 * time.Millisecond)
	}
	allPods := time.Since(start)
	cpu1 := cpuSeconds(pids)
	var cpu float64
	for name := range pids {
		cpu += cpu1[name] - cpu0[name]
	}
	// Events are sent by the recorders' own goroutines, after the pods: count until the
	// writes have been quiet for 3 s (at most a minute).
	w := writes.snapshot()
	for quietSince, limit := time.Now(), time.Now().Add(time.Minute); time.Since(quietSince) < 3*time.Second && time.Now().Before(limit); {
		time.Sleep(250 * time.Millisecond)
		if now := writes.snapshot(); now != w {
			w, quietSince = now, time.Now()
		}
	}
	total := w.podCreates + w.statusWrites + w.events
	refused := refusedWrites(ctx, b, cl).minus(before)
	b.ReportMetric(allPods.Seconds(), "s-to-all-pods")
	b.ReportMetric(float64(total)/float64(jobs), "writes/job")
	b.ReportMetric(float64(w.statusWrites)/float64(jobs), "status-writes/job")
	b.ReportMetric(float64(w.events)/float64(jobs), "event-writes/job")
	b.ReportMetric(cpu, "controller-cpu-s")
	b.ReportMetric(refused.writes(), "refused-writes")
	b.Logf("%s: %d Jobs x %d pods created in %v; all %d pods after %v; writes: %d pod creates, %d Job status writes, %d Event writes (%.1f per Job); refused (409) writes: %.0f %v; controller CPU %.1f s over %v",
		run.name, jobs, perJob, created.Round(time.Millisecond), want, allPods.Round(time.Millisecond), w.podCreates, w.statusWrites, w.events,
		float64(total)/float64(jobs), refused.writes(), refused.sortedKeys(), cpu, pidNames(pids))
}

// refusedWrites reads the API server's count of writes it refused with 409 (a create of a
// name that exists, an update from a stale resourceVersion). The load creates each Job once,
// under a fresh name, so a difference over a run is the controller's.
func refusedWrites(ctx context.Context, b *testing.B, cl *cluster.Cluster) requestCounts {
	metrics, err := cl.APIServerMetrics(ctx)
	if err != nil {
		b.Fatal(err)
	}
	all, err := apiserverRequests(metrics)
	if err != nil {
		b.Fatal(err)
	}
	out := requestCounts{}
	for k, v := range all {
		if k.code == "409" && k.isWrite() {
			out[k] = v
		}
	}
	return out
}

func pidNames(pids map[string]int) []string {
	var out []string
	for name := range pids {
		out = append(out, name)
	}
	return out
}

// batchBenchJob is a Job of n small pods, all at once, that run for podRun.
func batchBenchJob(ns, name string, n int, podRun time.Duration, ringfire bool) *batchv1.Job {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			Completions: ptr.To(int32(n)), Parallelism: ptr.To(int32(n)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{cluster.PodDurationAnnotation: podRun.String()}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "main", Image: "example.invalid/work:1",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse(benchCPU), corev1.ResourceMemory: resource.MustParse(benchMemory)}}}},
				},
			},
		},
	}
	if ringfire {
		job.Spec.ManagedBy = ptr.To(cache.BatchJobManager)
	}
	return job
}

// writeWatch counts, from watches of the namespace, the writes a Job controller makes: pods
// created, Job updates (status writes: the load creates each Job once and changes nothing),
// Events created or patched (their count).
type writeWatch struct {
	podCreates, statusWrites, events atomic.Int64
}

type writeCounts struct{ podCreates, statusWrites, events int64 }

func (w *writeWatch) pods() int { return int(w.podCreates.Load()) }

func (w *writeWatch) snapshot() writeCounts {
	return writeCounts{w.podCreates.Load(), w.statusWrites.Load(), w.events.Load()}
}

func (w *writeWatch) start(ctx context.Context, b *testing.B, kube kubernetes.Interface, ns string) {
	// One resourceVersion for the three watches: the namespace's state now.
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		b.Fatal(err)
	}
	rv := list.ResourceVersion
	watchKind(ctx, b, rv, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return kube.CoreV1().Pods(ns).Watch(ctx, o)
	}, func(ev watch.Event) {
		if ev.Type == watch.Added {
			w.podCreates.Add(1)
		}
	})
	watchKind(ctx, b, rv, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return kube.BatchV1().Jobs(ns).Watch(ctx, o)
	}, func(ev watch.Event) {
		if ev.Type == watch.Modified {
			w.statusWrites.Add(1)
		}
	})
	watchKind(ctx, b, rv, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return kube.CoreV1().Events(ns).Watch(ctx, o)
	}, func(ev watch.Event) {
		if e, ok := ev.Object.(*corev1.Event); ok && e.InvolvedObject.Kind == "Job" && (ev.Type == watch.Added || ev.Type == watch.Modified) {
			w.events.Add(1)
		}
	})
}

// watchKind watches from rv on, without gaps, until ctx ends.
func watchKind(ctx context.Context, b *testing.B, rv string, wf func(context.Context, metav1.ListOptions) (watch.Interface, error), see func(watch.Event)) {
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &toolscache.ListWatch{WatchFuncWithContext: wf})
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for ev := range rw.ResultChan() {
			see(ev)
		}
	}()
	b.Cleanup(rw.Stop)
}
