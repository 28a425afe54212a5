package cache_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
)

// adoptSlots is the ring's slot count in the adoption tests.
const adoptSlots = 256

// requestCounter counts the requests through a client, by method.
type requestCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		c.mu.Lock()
		c.counts[req.Method]++
		c.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

func (c *requestCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	c.counts = map[string]int{}
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// The cost of adoption: $RINGFIRE_ADOPT_PODS pods (default 1,000; docs/migration.md reports
// 10,000) of Jobs of 10 pods, each Job with its PodGroup, all without the slot label, as
// vc-controller-manager left them. A cache that gains every slot labels them all before the
// slots become ready, with one list per page of unlabelled objects and one patch per object;
// a second cache gaining every slot afterwards (a new replica) finds nothing and pays one list
// per resource.
func TestAdoptCost(t *testing.T) {
	pods := 1000
	if v := os.Getenv("RINGFIRE_ADOPT_PODS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 {
			t.Fatalf("RINGFIRE_ADOPT_PODS=%q: want a number of pods, at least 10", v)
		}
		pods = n
	}
	const perJob = 10
	jobs := pods / perJob

	cl := cluster.StartForTest(t, cluster.Options{Nodes: -1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := crds.Install(ctx, cl.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	setup := rest.CopyConfig(cl.RESTConfig())
	setup.QPS, setup.Burst = 2000, 4000
	kube := kubernetes.NewForConfigOrDie(setup)
	vc := vcclient.NewForConfigOrDie(setup)

	start := time.Now()
	parallel(t, jobs, func(i int) error { return makeVolcanoJob(ctx, kube, vc, fmt.Sprintf("job-%d", i), perJob) })
	t.Logf("made %d Jobs with %d pods and %d PodGroups, unlabelled, in %v", jobs, jobs*perJob, jobs, time.Since(start).Round(time.Millisecond))

	// A replica's cache, counting the adoption's requests apart (its metadata client).
	run := func(name string) (*cache.Cache, time.Duration, map[string]int) {
		counter := &requestCounter{counts: map[string]int{}}
		cfg := rest.CopyConfig(cl.RESTConfig())
		cfg.QPS, cfg.Burst = 200, 400 // ringfire run's defaults
		mcfg := rest.CopyConfig(cfg)
		mcfg.Wrap(counter.wrap)
		ready := make(chan []int, adoptSlots)
		c := cache.New(cache.Config{
			Kube: kubernetes.NewForConfigOrDie(cfg), Volcano: vcclient.NewForConfigOrDie(cfg),
			Metadata: metadata.NewForConfigOrDie(mcfg), Slots: func() int { return adoptSlots },
			SlotsReady: func(slots []int) { ready <- slots },
		})
		all := make([]int, adoptSlots)
		for i := range all {
			all[i] = i
		}
		cctx, stop := context.WithCancel(ctx)
		t.Cleanup(stop)
		if err := c.Start(cctx); err != nil {
			t.Fatal(err)
		}
		begin := time.Now()
		c.SlotsGained(all)
		for got := 0; got < adoptSlots; {
			select {
			case slots := <-ready:
				got += len(slots)
			case <-time.After(5 * time.Minute):
				t.Fatalf("%s: %d of %d slots ready after 5 minutes", name, got, adoptSlots)
			}
		}
		took := time.Since(begin)
		return c, took, counter.take()
	}

	first, took, reqs := run("first replica")
	st := first.AdoptStats()
	t.Logf("first replica: every slot ready in %v; adoption: %d sweep(s), %d list requests over %d unlabelled objects, %d patches, %d objects labelled; its requests by method: %v",
		took.Round(time.Millisecond), st.Sweeps, st.Lists, st.Listed, st.Patches, st.Adopted, reqs)
	if want := uint64(jobs * (perJob + 1)); st.Adopted != want {
		t.Errorf("labelled %d objects, want every pod and PodGroup (%d)", st.Adopted, want)
	}
	if got := len(first.Owned(cache.Pods).Indexer().List()); got != pods {
		t.Errorf("%d pods in the cache once ready, want %d", got, pods)
	}
	if got := len(first.Owned(cache.PodGroups).Indexer().List()); got != jobs {
		t.Errorf("%d PodGroups in the cache once ready, want %d", got, jobs)
	}
	left, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: cache.AdoptSelector(cache.Pods)})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 0 {
		t.Errorf("%d pods of Jobs still without the slot label", len(left.Items))
	}
	if reqs["PATCH"] != int(st.Adopted) {
		t.Errorf("%d patches for %d objects, want one each", reqs["PATCH"], st.Adopted)
	}

	// A new replica gaining every slot: nothing left to adopt.
	_, took, reqs = run("second replica")
	t.Logf("second replica: every slot ready in %v; adoption's requests by method: %v", took.Round(time.Millisecond), reqs)
	if reqs["PATCH"] != 0 {
		t.Errorf("the second replica patched %d objects, want none", reqs["PATCH"])
	}
	if reqs["GET"] != len(cache.Owned) {
		t.Errorf("the second replica's sweep made %d list requests, want one per resource (%d)", reqs["GET"], len(cache.Owned))
	}
}

// parallel runs do(0..n-1), 16 at a time; an error fails the test.
func parallel(t *testing.T, n int, do func(i int) error) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// makeVolcanoJob makes a Job and, as vc-controller-manager leaves them, its PodGroup and pods
// pods: controlled by the Job, pods labelled volcano.sh/job-name, neither with the slot label.
func makeVolcanoJob(ctx context.Context, kube kubernetes.Interface, vc vcclient.Interface, name string, pods int) error {
	job, err := vc.BatchV1alpha1().Jobs("default").Create(ctx, &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batch.JobSpec{Queue: "default", MinAvailable: int32(pods), Tasks: []batch.TaskSpec{{
			Name: "worker", Replicas: int32(pods),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/x"}}}},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	yes := true
	owner := []metav1.OwnerReference{{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: name, UID: job.UID, Controller: &yes, BlockOwnerDeletion: &yes}}
	pg := &scheduling.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-" + string(job.UID), Namespace: "default", OwnerReferences: owner},
		Spec:       scheduling.PodGroupSpec{MinMember: int32(pods), Queue: "default"},
	}
	if _, err := vc.SchedulingV1beta1().PodGroups("default").Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		return err
	}
	for i := range pods {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-worker-%d", name, i), Namespace: "default", OwnerReferences: owner,
				Labels: map[string]string{
					batch.JobNameKey: name, batch.JobNamespaceKey: "default", batch.TaskSpecKey: "worker",
					batch.TaskIndex: strconv.Itoa(i), batch.QueueNameKey: "default",
				},
				Annotations: map[string]string{scheduling.KubeGroupNameAnnotationKey: pg.Name, batch.TaskSpecKey: "worker", batch.JobNameKey: name},
			},
			// No node and a scheduler that does not run here: the pods stay Pending.
			Spec: corev1.PodSpec{SchedulerName: "volcano", Containers: []corev1.Container{{Name: "c", Image: "example.invalid/x"}}},
		}
		if _, err := kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}
