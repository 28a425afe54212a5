package cronjob

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/controllers/kit"
	"github.com/ringfire/ringfire/shard"
)

// someSlots holds the slots it is given, for as long as the test runs.
type someSlots struct {
	ctx  context.Context
	mu   sync.Mutex
	held map[int]bool
}

func (o *someSlots) Slots() int { return 64 }

func (o *someSlots) SlotContext(slot int) (context.Context, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ctx, o.held[slot]
}

func (o *someSlots) hold(slot int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.held[slot] = true
}

// run starts a controller with real informers and a real clock over fake clients.
func run(ctx context.Context, t *testing.T, own shard.Ownership, maxRequeue int, vc *vcfake.Clientset) (*Controller, *kubefake.Clientset) {
	t.Helper()
	kube := kubefake.NewSimpleClientset()
	cfg := DefaultConfig()
	cfg.Kube, cfg.Volcano, cfg.Ownership, cfg.MaxRequeue = kube, vc, own, maxRequeue
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return c, kube
}

// eventually polls cond for up to 10 seconds.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s; last: %s", what, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func jobNames(vc *vcfake.Clientset) string {
	list, _ := vc.BatchV1alpha1().Jobs(ns).List(context.Background(), metav1.ListOptions{})
	var names []string
	for _, j := range list.Items {
		names = append(names, j.Name)
	}
	return strings.Join(names, ",")
}

// A replica starts the Jobs of the CronJobs of its slots only; a slot it gains has its
// CronJobs looked at at once; a Job's phase change brings its CronJob's status up to date.
func TestControllerOnHeldSlotsAndJobEvents(t *testing.T) {
	// Once a day, at a minute just passed: exactly one time is due now, and no other comes
	// while the test runs (the clock is real).
	now := time.Now().UTC()
	created, due := now.Add(-3*time.Minute), now.Add(-time.Minute)
	daily := fmt.Sprintf("%d %d * * *", due.Minute(), due.Hour())
	held, other := newCronJob("held", daily, created), (*batch.CronJob)(nil)
	for i := 0; other == nil; i++ {
		name := fmt.Sprintf("other-%d", i)
		if shard.SlotOf(ns+"/"+name, 64) != shard.SlotOf(ns+"/held", 64) {
			other = newCronJob(name, daily, created)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	own := &someSlots{ctx: ctx, held: map[int]bool{shard.SlotOf(ns+"/held", 64): true}}
	vc := vcfake.NewSimpleClientset(held, other)
	c, _ := run(ctx, t, own, kit.DefaultMaxRequeue, vc)

	var jobName string
	eventually(t, "the held CronJob starts its Job", func() (bool, string) {
		cj, _ := vc.BatchV1alpha1().CronJobs(ns).Get(context.Background(), "held", metav1.GetOptions{})
		if len(cj.Status.Active) == 1 {
			jobName = cj.Status.Active[0].Name
		}
		return jobName != "", jobNames(vc)
	})
	if names := jobNames(vc); strings.Contains(names, other.Name) {
		t.Fatalf("a CronJob of a slot not held got a Job: %s", names)
	}

	own.hold(shard.SlotOf(ns+"/"+other.Name, 64))
	c.SlotsGained([]int{shard.SlotOf(ns+"/"+other.Name, 64)})
	eventually(t, "the gained CronJob starts its Job", func() (bool, string) {
		names := jobNames(vc)
		return strings.Contains(names, other.Name+"-"), names
	})

	job, err := vc.BatchV1alpha1().Jobs(ns).Get(context.Background(), jobName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	finishedAt := metav1.NewTime(time.Now().Truncate(time.Second))
	job.ResourceVersion = "2"
	job.Status.State = batch.JobState{Phase: batch.Completed, LastTransitionTime: finishedAt}
	if _, err := vc.BatchV1alpha1().Jobs(ns).UpdateStatus(context.Background(), job, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Job's completion reaches the CronJob's status", func() (bool, string) {
		cj, _ := vc.BatchV1alpha1().CronJobs(ns).Get(context.Background(), "held", metav1.GetOptions{})
		st := cj.Status
		return len(st.Active) == 0 && st.LastSuccessfulTime != nil && st.LastSuccessfulTime.Equal(&finishedAt), fmt.Sprintf("%+v", st)
	})
}

// A Job template the API server refuses is retried with backoff, then given up with an event;
// other CronJobs go on meanwhile.
func TestControllerGivesUpOnARefusedTemplate(t *testing.T) {
	created := time.Now().Add(-90 * time.Second)
	bad, good := newCronJob("bad", "* * * * *", created), newCronJob("good", "* * * * *", created)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	vc := vcfake.NewSimpleClientset(bad, good)
	vc.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		job := a.(k8stesting.CreateAction).GetObject().(*batch.Job)
		if !strings.HasPrefix(job.Name, "bad-") {
			return false, nil, nil
		}
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "batch.volcano.sh", Kind: "Job"}, job.Name, nil)
	})
	_, kube := run(ctx, t, shard.HoldAll{Ctx: ctx, S: 64}, 3, vc)
	eventually(t, "FailedCreate and RetryLimitReached on the bad CronJob, a Job for the good one", func() (bool, string) {
		list, _ := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		var reasons []string
		for _, e := range list.Items {
			if e.InvolvedObject.Name == "bad" && e.Type == corev1.EventTypeWarning {
				reasons = append(reasons, e.Reason+": "+e.Message)
			}
		}
		r := strings.Join(reasons, "; ")
		return strings.Contains(r, "FailedCreate") && strings.Contains(r, "RetryLimitReached: gave up after 4 failed tries") &&
			strings.Contains(jobNames(vc), "good-"), r
	})
}
