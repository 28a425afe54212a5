package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/e2e/vcjob"
)

// load is one burst of Jobs created into a fresh namespace.
type load struct {
	kube      kubernetes.Interface
	volcano   vcclient.Interface
	namespace string
	jobs      int
	taskPods  int
	creators  int           // goroutines creating a burst
	rate      int           // Jobs per second, steadily, instead of a burst (0: a burst)
	podRun    time.Duration // each pod's run time on its KWOK node
	limit     time.Duration // bound on first create → all pods
	log       func(format string, args ...any)
	// ttl, if set, is each Job's ttlSecondsAfterFinished: a long load then
	// keeps the cluster's object count level instead of piling up.
	ttl *int32
	// steps, if set, also watches the namespace's PodGroups, so that the
	// result says which step of each Job's chain waited (chain_test.go).
	steps bool
}

// loadResult is what a load measured. Durations count from start, just
// before the first create call.
type loadResult struct {
	start       time.Time
	jobsCreated time.Duration   // until the last Job create returned
	allPods     time.Duration   // until the last pod was seen by the watch
	jobLatency  []time.Duration // per Job: its create returned → its last pod seen, sorted
	// created and done are per Job (by index): when its create returned,
	// and when its last pod was seen (zero if never).
	created, done []time.Time
	pods          int // distinct pods seen
	duplicates    int // pod names seen added more than once
	// lastCreated is the latest creationTimestamp of the pods: the API
	// server's own clock (whole seconds), a check on the watch's lag.
	lastCreated time.Time
	chain       *chain // nil unless load.steps
}

// What each benchmark pod asks for: small, so that a burst of thousands
// fits the KWOK nodes.
const (
	benchCPU    = "10m"
	benchMemory = "16Mi"
)

// benchJob is a Job of one task of n small pods that run for podRun, then
// succeed (KWOK's stages in e2e/cluster read the annotation).
func benchJob(namespace, name string, n int, podRun time.Duration) *batch.Job {
	return vcjob.New(namespace, name, vcjob.TaskOf("worker", int32(n), vcjob.Runs(podRun.String(), ""), benchCPU, benchMemory))
}

// run starts a watch on the pods of its namespace (made beforehand, see
// makeNamespaces), creates the Jobs (from l.creators goroutines as fast as
// the API server takes them, or at l.rate a second), and returns once the
// watch has seen every pod or l.limit has passed.
func (l load) run(ctx context.Context) (loadResult, error) {
	ctx, cancel := context.WithTimeout(ctx, l.limit)
	defer cancel()
	w, err := l.watchPods(ctx)
	if err != nil {
		return loadResult{}, err
	}
	defer w.Stop()
	var steps *chain
	if l.steps {
		if steps, err = watchChain(ctx, l.volcano, l.namespace); err != nil {
			return loadResult{}, err
		}
	}

	start := time.Now()
	created := make([]time.Time, l.jobs)
	createErr := make(chan error, 1)
	go func(done chan<- error) {
		if l.rate > 0 {
			done <- l.createJobsAtRate(ctx, created)
		} else {
			done <- l.createJobs(ctx, created)
		}
	}(createErr)
	want := l.jobs * l.taskPods
	tally := newPodTally(l.taskPods, want)
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	for tally.pods < want {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Error {
				return tally.result(start), fmt.Errorf("pod watch ended after %d of %d pods: %v", tally.pods, want, ev.Object)
			}
			if pod, isPod := ev.Object.(*corev1.Pod); isPod && ev.Type == watch.Added {
				tally.add(pod)
			}
		case err := <-createErr:
			createErr = nil // every create has returned
			if err != nil {
				return tally.result(start), err
			}
			l.log("%d Jobs created in %.1fs", l.jobs, time.Since(start).Seconds())
		case <-progress.C:
			l.log("%.0fs: %d of %d pods, %d of %d Jobs complete", time.Since(start).Seconds(), tally.pods, want, len(tally.jobDone), l.jobs)
		case <-ctx.Done():
			return tally.result(start), fmt.Errorf("%d of %d pods (%d of %d Jobs complete) after %v",
				tally.pods, want, len(tally.jobDone), l.jobs, l.limit)
		}
	}
	res := tally.result(start)
	res.allPods, res.chain = time.Since(start), steps
	if createErr != nil {
		// Every pod exists, so every create has returned, or failed after
		// landing; only the send is left.
		if err := <-createErr; err != nil {
			return res, err
		}
	}
	res.created, res.done = created, make([]time.Time, len(created))
	for i, at := range created {
		res.done[i] = tally.jobDone[jobName(i)]
		res.jobsCreated = max(res.jobsCreated, at.Sub(start))
		res.jobLatency = append(res.jobLatency, max(0, res.done[i].Sub(at)))
	}
	slices.Sort(res.jobLatency)
	return res, nil
}

// podTally counts the pods a watch reports added, per Job.
type podTally struct {
	taskPods    int
	seen        map[string]bool
	perJob      map[string]int
	jobDone     map[string]time.Time // when a Job's last pod was seen
	pods        int
	duplicates  int
	lastCreated time.Time
}

func newPodTally(taskPods, want int) *podTally {
	return &podTally{taskPods: taskPods, seen: make(map[string]bool, want), perJob: map[string]int{}, jobDone: map[string]time.Time{}}
}

func (t *podTally) add(pod *corev1.Pod) {
	if t.seen[pod.Name] {
		t.duplicates++
		return
	}
	t.seen[pod.Name] = true
	t.pods++
	if c := pod.CreationTimestamp.Time; c.After(t.lastCreated) {
		t.lastCreated = c
	}
	job := pod.Labels[batch.JobNameKey]
	if t.perJob[job]++; t.perJob[job] == t.taskPods {
		t.jobDone[job] = time.Now()
	}
}

func (t *podTally) result(start time.Time) loadResult {
	return loadResult{start: start, pods: t.pods, duplicates: t.duplicates, lastCreated: t.lastCreated}
}

func jobName(i int) string { return fmt.Sprintf("job-%05d", i) }

// watchPods watches the pods of the namespace's Jobs from now on, resuming
// after a dropped connection.
func (l load) watchPods(ctx context.Context) (watch.Interface, error) {
	pods := l.kube.CoreV1().Pods(l.namespace)
	return watchFromNow(ctx, "pods", func(ctx context.Context, opts metav1.ListOptions) (metav1.ListInterface, error) {
		return pods.List(ctx, opts)
	}, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.LabelSelector = batch.JobNameKey
		return pods.Watch(ctx, opts)
	})
}

// watchFromNow watches what list and watchFn reach from the resourceVersion
// of a list of one object (now), resuming after a dropped connection.
func watchFromNow(ctx context.Context, what string,
	list func(context.Context, metav1.ListOptions) (metav1.ListInterface, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) (watch.Interface, error) {
	now, err := list(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", what, err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, now.GetResourceVersion(), &toolscache.ListWatch{WatchFuncWithContext: watchFn})
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", what, err)
	}
	return w, nil
}

// createJobs creates the Jobs, recording when each create returned. A
// failed create is retried a few times: under this load the API server may
// time a request out.
func (l load) createJobs(ctx context.Context, created []time.Time) error {
	return inParallel(l.creators, l.jobs, func(i int) error {
		if err := l.createJob(ctx, jobName(i)); err != nil {
			return err
		}
		created[i] = time.Now()
		return nil
	})
}

// inParallel calls do(0) … do(n-1) from workers goroutines, stops handing
// out indexes at the first error, and returns once every call has.
func inParallel(workers, n int, do func(i int) error) error {
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for i := range n {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	return errors.Join(err, <-errs)
}

func (l load) createJob(ctx context.Context, name string) error {
	job := benchJob(l.namespace, name, l.taskPods, l.podRun)
	job.Spec.TTLSecondsAfterFinished = l.ttl
	var err error
	for attempt := range 5 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = l.volcano.BatchV1alpha1().Jobs(l.namespace).Create(rctx, job, metav1.CreateOptions{})
		cancel()
		// AlreadyExists after a retry: the earlier attempt landed.
		if err == nil || (attempt > 0 && apierrors.IsAlreadyExists(err)) {
			return nil
		}
	}
	return fmt.Errorf("create job %s: %w", name, err)
}

// percentile returns the p-th percentile (0 < p ≤ 100) of sorted values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
