package robusttest

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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// holdFinalizer is the test's own finalizer on the earlier Job's pods: the garbage collector
// marks them deleted and cannot finish until the test lets go, as a slow collector, a node
// that does not answer, or someone else's finalizer would hold them.
const holdFinalizer = "robusttest.ringfire.io/hold"

// held is how long the earlier Job's pods linger, being deleted, after the new Job is made.
const held = 6 * time.Second

// A Job deleted without waiting (kubectl delete --wait=false) and made again under its name,
// while its predecessor's pods linger being deleted: the new Job runs its own pods and
// completes on them, never on the earlier ones (Volcano completes it at once on a Completed
// predecessor's Succeeded pods). One namespace per case, side by side on one stack.
func TestRecreatedJob(t *testing.T) {
	s := stack.Start(t, stack.Options{Replicas: 3, StandIn: true})
	stack.RunParallel(t, s,
		stack.Case{Name: "Completed predecessor", Run: func(t *testing.T, s *stack.Stack) { recreate(t, s, "rc-completed", batch.Completed) }},
		stack.Case{Name: "Running predecessor", Run: func(t *testing.T, s *stack.Stack) { recreate(t, s, "rc-running", batch.Running) }},
		stack.Case{Name: "Failed predecessor", Run: func(t *testing.T, s *stack.Stack) { recreate(t, s, "rc-failed", batch.Failed) }},
	)
}

// predecessor is the first Job rc of ns, made to end in phase.
func predecessor(ns string, phase batch.JobPhase) *batch.Job {
	switch phase {
	case batch.Running:
		return vcjob.New(ns, "rc", vcjob.Task("worker", 2, "10m", ""))
	case batch.Failed:
		job := vcjob.New(ns, "rc", vcjob.Task("worker", 2, "1s", "1"))
		job.Spec.MaxRetry = 1
		job.Spec.Policies = []batch.LifecyclePolicy{{Event: bus.PodFailedEvent, Action: bus.RestartJobAction}}
		return job
	}
	return vcjob.New(ns, "rc", vcjob.Task("worker", 2, "1s", ""))
}

// podSeen is one pod creation the API server reported.
type podSeen struct {
	name       string
	uid, owner types.UID
}

// jobSeen is one state of a Job the API server reported, and when the test saw it.
type jobSeen struct {
	at     time.Time
	status batch.JobStatus
}

// record is what the watches saw in one namespace.
type record struct {
	mu      sync.Mutex
	created []podSeen
	jobs    map[types.UID][]jobSeen
}

func (r *record) creations(owner types.UID) map[string][]types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]types.UID{}
	for _, p := range r.created {
		if p.owner == owner {
			out[p.name] = append(out[p.name], p.uid)
		}
	}
	return out
}

func (r *record) statuses(uid types.UID) []jobSeen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]jobSeen(nil), r.jobs[uid]...)
}

func watchNamespace(s *stack.Stack, ns string) *record {
	r := &record{jobs: map[types.UID][]jobSeen{}}
	s.WatchPods(ns, func(ev watch.EventType, pod *corev1.Pod) {
		if ev != watch.Added {
			return
		}
		var owner types.UID
		if ref := metav1.GetControllerOf(pod); ref != nil {
			owner = ref.UID
		}
		r.mu.Lock()
		r.created = append(r.created, podSeen{pod.Name, pod.UID, owner})
		r.mu.Unlock()
	})
	s.WatchJobs(ns, func(ev watch.EventType, job *batch.Job) {
		if ev == watch.Deleted {
			return
		}
		r.mu.Lock()
		r.jobs[job.UID] = append(r.jobs[job.UID], jobSeen{time.Now(), job.Status})
		r.mu.Unlock()
	})
	return r
}

func recreate(t *testing.T, s *stack.Stack, ns string, phase batch.JobPhase) {
	ctx := context.Background()
	if _, err := s.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	seen := watchNamespace(s, ns)

	first := vcjob.Create(t, s.Volcano, predecessor(ns, phase))
	s.WaitPhase(ns, "rc", 120*time.Second, phase)
	oldPods := podsOwnedBy(t, s, ns, first.UID)
	if len(oldPods) == 0 {
		t.Fatalf("the %s predecessor has no pods left to linger\n%s", phase, s.Describe(ns, "rc"))
	}
	// The garbage collector may not finish with them until the test lets go.
	for _, p := range oldPods {
		patch := fmt.Sprintf(`{"metadata":{"finalizers":[%q],"uid":%q}}`, holdFinalizer, p.UID)
		if _, err := s.Kube.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("hold pod %s: %v", p.Name, err)
		}
	}
	// kubectl delete vcjob rc --wait=false: the Job goes at once, its pods after it.
	if err := s.Volcano.BatchV1alpha1().Jobs(ns).Delete(ctx, "rc", metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	}); err != nil {
		t.Fatal(err)
	}
	stack.WaitUntil(t, "the first rc gone", 30*time.Second, func() bool {
		_, err := s.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, "rc", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	second := vcjob.Create(t, s.Volcano, vcjob.New(ns, "rc", vcjob.Task("worker", 2, "3s", "")))
	if second.UID == first.UID {
		t.Fatal("the re-created Job has its predecessor's UID")
	}

	// The new Job says what it waits for, and does not start while the names are held.
	wantWait := fmt.Sprintf("of an earlier Job rc (uid %s) to be deleted", first.UID)
	stack.WaitFor(t, "a WaitingForDeletion Event on the new rc", 60*time.Second, func() (bool, string) {
		got := s.Events(ns, "rc", "WaitingForDeletion")
		for _, m := range got {
			if strings.Contains(m, wantWait) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("events %q\n%s", got, s.Describe(ns, "rc"))
	})
	time.Sleep(held)
	if still := podsOwnedBy(t, s, ns, first.UID); len(still) != len(oldPods) {
		t.Fatalf("%d of the %d held pods left before they were let go: the test's hold did not hold", len(oldPods)-len(still), len(oldPods))
	}
	if mine := podsOwnedBy(t, s, ns, second.UID); len(mine) != 0 {
		t.Errorf("the new rc made %d pods while every name was held", len(mine))
	}
	released := time.Now()
	for _, p := range oldPods {
		patch := fmt.Sprintf(`{"metadata":{"finalizers":null,"uid":%q}}`, p.UID)
		if _, err := s.Kube.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("let go of pod %s: %v", p.Name, err)
		}
	}

	done := s.WaitPhase(ns, "rc", 120*time.Second, batch.Completed)
	if done.UID != second.UID {
		t.Fatalf("rc completed with uid %s, want the new one %s", done.UID, second.UID)
	}

	// Audit: the new Job ran its own pods, each created once, and its counts are theirs.
	mine := podsOwnedBy(t, s, ns, second.UID)
	var succeeded int32
	for _, p := range mine {
		for _, o := range oldPods {
			if p.UID == o.UID {
				t.Errorf("pod %s of the new rc has the uid of an earlier pod", p.Name)
			}
		}
		if p.Status.Phase == corev1.PodSucceeded {
			succeeded++
		}
	}
	if len(mine) != 2 || succeeded != 2 || done.Status.Succeeded != succeeded {
		t.Errorf("new rc: %d pods of its own, %d Succeeded; status.succeeded %d; want 2, 2, 2\n%s",
			len(mine), succeeded, done.Status.Succeeded, s.Describe(ns, "rc"))
	}
	for name, uids := range seen.creations(second.UID) {
		if len(uids) != 1 {
			t.Errorf("pod %s created %d times under the new rc", name, len(uids))
		}
	}
	// Before the earlier pods were let go, the new Job counted nothing and had not started.
	for _, st := range seen.statuses(second.UID) {
		if !st.at.Before(released) {
			break
		}
		if c := st.status; c.Succeeded+c.Running+c.Failed+c.Pending+c.Terminating != 0 ||
			(c.State.Phase != "" && c.State.Phase != batch.Pending) {
			t.Errorf("while the earlier pods lingered the new rc had phase %q succeeded %d running %d failed %d pending %d terminating %d",
				c.State.Phase, c.Succeeded, c.Running, c.Failed, c.Pending, c.Terminating)
		}
	}
	// One Event for the wait, not one per reconcile.
	if waits := s.Events(ns, "rc", "WaitingForDeletion"); len(waits) != 1 {
		t.Errorf("%d WaitingForDeletion Events, want 1: %q", len(waits), waits)
	}
}

// podsOwnedBy lists the pods of ns whose controller has uid.
func podsOwnedBy(t *testing.T, s *stack.Stack, ns string, uid types.UID) []corev1.Pod {
	t.Helper()
	list, err := s.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == uid {
			out = append(out, p)
		}
	}
	return out
}
