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
	"github.com/ringfire/ringfire/internal/guard"
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

// warnings lists the Warning Events recorded on the CronJob name, "reason: message".
func warnings(kube *kubefake.Clientset, name string) string {
	list, _ := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Type == corev1.EventTypeWarning {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return strings.Join(out, "; ")
}

// On Volcano's CRD, which lets any string through, a schedule edited to "TZ=UTC" (a zone with
// no space and no fields after it, on which the cron library panics) goes through the real
// informer handler without a panic, and the reconcile reports it as UnparseableSchedule. The
// handler only enqueues: before, it parsed the schedule on the informer's goroutine, and the
// panic, re-raised by client-go, ended every replica at once.
func TestScheduleEditedToABareZoneIsReportedNotPanicked(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	now := time.Now().UTC()
	// Daily, twelve hours away: nothing is due while the test runs.
	cj := newCronJob("tz", fmt.Sprintf("0 %d * * *", (now.Hour()+12)%24), now.Add(-time.Minute))
	cj.ResourceVersion = "1"
	vc := vcfake.NewSimpleClientset(cj)
	_, kube := run(ctx, t, shard.HoldAll{Ctx: ctx, S: 64}, kit.DefaultMaxRequeue, vc)
	before := guard.Panics("cronjob")

	for i, schedule := range []string{"TZ=UTC", "CRON_TZ=Europe/Paris", "TZ="} {
		edited, err := vc.BatchV1alpha1().CronJobs(ns).Get(ctx, "tz", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		edited.Spec.Schedule, edited.ResourceVersion = schedule, fmt.Sprint(i+2)
		if _, err := vc.BatchV1alpha1().CronJobs(ns).Update(ctx, edited, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "an UnparseableSchedule Warning naming "+schedule, func() (bool, string) {
			w := warnings(kube, "tz")
			return strings.Contains(w, fmt.Sprintf("UnparseableSchedule: unparseable schedule %q", schedule)), w
		})
	}
	if n := guard.Panics("cronjob") - before; n != 0 {
		t.Errorf("the CronJob handlers panicked %v times", n)
	}
	if jobs := jobNames(vc); jobs != "" {
		t.Errorf("Jobs made from an unparseable schedule: %s", jobs)
	}
}

// An edited schedule starts no Job for a time that has already passed: the reconcile the edit
// brings waits for the new schedule's next time. Any other edit looks at the CronJob now, and
// then that time is started, as Kubernetes does.
func TestEditedScheduleWaitsForItsNextTime(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	now := time.Now().UTC()
	due := now.Add(-time.Minute)
	cj := newCronJob("edit", fmt.Sprintf("0 %d * * *", (now.Hour()+12)%24), now.Add(-3*time.Minute))
	cj.ResourceVersion = "1"
	vc := vcfake.NewSimpleClientset(cj)
	c, _ := run(ctx, t, shard.HoldAll{Ctx: ctx, S: 64}, kit.DefaultMaxRequeue, vc)
	eventually(t, "the first reconcile to ask for the next schedule time", func() (bool, string) {
		_, ok := c.Wakes.At(ns + "/edit")
		return ok, "no wake-up"
	})

	edited := cj.DeepCopy()
	edited.Spec.Schedule, edited.ResourceVersion = fmt.Sprintf("%d %d * * *", due.Minute(), due.Hour()), "2"
	if _, err := vc.BatchV1alpha1().CronJobs(ns).Update(ctx, edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the edit's reconcile runs in a few milliseconds
	if jobs := jobNames(vc); jobs != "" {
		t.Fatalf("the schedule's edit started %s, for a time that had passed", jobs)
	}

	edited = edited.DeepCopy()
	edited.Labels, edited.ResourceVersion = map[string]string{"touched": "yes"}, "3"
	if _, err := vc.BatchV1alpha1().CronJobs(ns).Update(ctx, edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "another edit to start the time due", func() (bool, string) {
		jobs := jobNames(vc)
		return strings.HasPrefix(jobs, "edit-"), jobs
	})
}
