package robusttest

import (
	"context"
	"fmt"
	"sort"
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
	flowv1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"

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
// predecessor's Succeeded pods). Each case in a namespace of its own.
func init() {
	for _, phase := range []batch.JobPhase{batch.Completed, batch.Running, batch.Failed} {
		register(Case{
			Name: fmt.Sprintf("a Job re-created over its %s predecessor's lingering pods runs its own", phase),
			Run:  func(t *testing.T, w *world) { recreate(t, w, phase) },
		})
	}
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

func watchNamespace(t *testing.T, w *world, ns string) *record {
	r := &record{jobs: map[types.UID][]jobSeen{}}
	stack.WatchPods(t, w.kube, ns, func(ev watch.EventType, pod *corev1.Pod) {
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
	stack.WatchJobs(t, w.volcano, ns, func(ev watch.EventType, job *batch.Job) {
		if ev == watch.Deleted {
			return
		}
		r.mu.Lock()
		r.jobs[job.UID] = append(r.jobs[job.UID], jobSeen{time.Now(), job.Status})
		r.mu.Unlock()
	})
	return r
}

func recreate(t *testing.T, w *world, phase batch.JobPhase) {
	ctx := context.Background()
	ns := vcjob.Namespace(t, w.kube, "recreate-"+strings.ToLower(string(phase)))
	jobs := w.volcano.BatchV1alpha1().Jobs(ns)
	pods := w.kube.CoreV1().Pods(ns)
	seen := watchNamespace(t, w, ns)
	rc := rcJob{t: t, w: w, ns: ns}

	first := vcjob.Create(t, w.volcano, predecessor(ns, phase))
	rc.waitPhase(3*time.Minute, phase)
	oldPods := rc.podsOwnedBy(first.UID)
	if len(oldPods) == 0 {
		t.Fatalf("the %s predecessor has no pods left to linger\n%s", phase, rc.describe())
	}
	// The garbage collector may not finish with them until the test lets go.
	for _, p := range oldPods {
		patch := fmt.Sprintf(`{"metadata":{"finalizers":[%q],"uid":%q}}`, holdFinalizer, p.UID)
		if _, err := pods.Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("hold pod %s: %v", p.Name, err)
		}
	}
	// Let go in any case, so that the namespace can go with the test; once only, for the
	// names pass to the new Job's pods.
	var let sync.Once
	letGo := func() {
		let.Do(func() {
			for _, p := range oldPods {
				patch := fmt.Sprintf(`{"metadata":{"finalizers":null,"uid":%q}}`, p.UID)
				if _, err := pods.Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("let go of pod %s: %v", p.Name, err)
				}
			}
		})
	}
	t.Cleanup(letGo)
	// kubectl delete vcjob rc --wait=false: the Job goes at once, its pods after it.
	if err := jobs.Delete(ctx, "rc", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	stack.WaitUntil(t, "the first rc gone", time.Minute, func() bool {
		_, err := jobs.Get(ctx, "rc", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	second := vcjob.Create(t, w.volcano, vcjob.New(ns, "rc", vcjob.Task("worker", 2, "3s", "")))
	if second.UID == first.UID {
		t.Fatal("the re-created Job has its predecessor's UID")
	}

	// The new Job says what it waits for, and does not start while the names are held.
	wantWait := fmt.Sprintf("of an earlier Job rc (uid %s) to be deleted", first.UID)
	stack.WaitFor(t, "a WaitingForDeletion Event on the new rc", 2*time.Minute, func() (bool, string) {
		got := rc.events("WaitingForDeletion")
		for _, m := range got {
			if strings.Contains(m, wantWait) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("events %q\n%s", got, rc.describe())
	})
	time.Sleep(held)
	if still := rc.podsOwnedBy(first.UID); len(still) != len(oldPods) {
		t.Fatalf("%d of the %d held pods left before they were let go: the test's hold did not hold", len(oldPods)-len(still), len(oldPods))
	}
	// A predecessor may leave fewer pods than names (a Failed one's restart took some): the new
	// Job makes the free names' pods, and none of a held name.
	heldNames := map[string]bool{}
	for _, p := range oldPods {
		heldNames[p.Name] = true
	}
	early := rc.podsOwnedBy(second.UID)
	for _, p := range early {
		if heldNames[p.Name] {
			t.Errorf("the new rc made pod %s while an earlier pod held the name", p.Name)
		}
	}
	released := time.Now()
	letGo()

	done := rc.waitPhase(3*time.Minute, batch.Completed)
	t.Logf("the new rc completed %v after the earlier pods were let go", time.Since(released).Round(100*time.Millisecond))
	if done.UID != second.UID {
		t.Fatalf("rc completed with uid %s, want the new one %s", done.UID, second.UID)
	}

	// Audit: the new Job ran its own pods, each created once, and its counts are theirs.
	mine := rc.podsOwnedBy(second.UID)
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
			len(mine), succeeded, done.Status.Succeeded, rc.describe())
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
		// It counts at most its own pods of the free names, and cannot have run as a gang.
		free := int32(2 - len(heldNames))
		if c := st.status; c.Succeeded+c.Running+c.Failed+c.Pending+c.Terminating > free ||
			(c.State.Phase != "" && c.State.Phase != batch.Pending) {
			t.Errorf("while %d earlier pods lingered the new rc had phase %q succeeded %d running %d failed %d pending %d terminating %d",
				len(heldNames), c.State.Phase, c.Succeeded, c.Running, c.Failed, c.Pending, c.Terminating)
		}
	}
	// One Event for the wait, not one per reconcile (every change of a held pod reconciles the
	// Job). A replica remembers what it told, so a slot handed on during the wait, which other
	// cases of the suite may cause, tells it again: at most once per replica.
	waits := rc.events("WaitingForDeletion")
	if len(waits) == 0 || len(waits) > replicas {
		t.Errorf("%d WaitingForDeletion Events, want 1 (at most %d with handovers): %q", len(waits), replicas, waits)
	}
	t.Logf("%d WaitingForDeletion Event(s): %q", len(waits), waits)
}

// rcJob reads the Job rc of a case's namespace and what belongs to it.
type rcJob struct {
	t  *testing.T
	w  *world
	ns string
}

// waitPhase waits until rc reaches phase and returns it.
func (r rcJob) waitPhase(limit time.Duration, phase batch.JobPhase) *batch.Job {
	r.t.Helper()
	var job *batch.Job
	stack.WaitFor(r.t, fmt.Sprintf("rc %s", phase), limit, func() (bool, string) {
		got, err := r.w.volcano.BatchV1alpha1().Jobs(r.ns).Get(context.Background(), "rc", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		job = got
		return got.Status.State.Phase == phase, r.describe()
	})
	return job
}

// events returns the messages of rc's Events of reason, each as often as it was recorded.
func (r rcJob) events(reason string) []string { return stack.Events(r.w.kube, r.ns, "rc", reason) }

// describe summarizes rc, the namespace's pods and rc's Events, for failure messages.
func (r rcJob) describe() string {
	ctx := context.Background()
	var b strings.Builder
	if job, err := r.w.volcano.BatchV1alpha1().Jobs(r.ns).Get(ctx, "rc", metav1.GetOptions{}); err == nil {
		fmt.Fprintf(&b, "rc uid %s status: %+v\n", job.UID, job.Status)
	}
	if pods, err := r.w.kube.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			var owner types.UID
			if ref := metav1.GetControllerOf(&p); ref != nil {
				owner = ref.UID
			}
			fmt.Fprintf(&b, "pod %s uid %s owner %s: %s deleting=%v\n", p.Name, p.UID, owner, p.Status.Phase, p.DeletionTimestamp != nil)
		}
	}
	if events, err := r.w.kube.CoreV1().Events(r.ns).List(ctx, metav1.ListOptions{}); err == nil {
		sort.Slice(events.Items, func(i, j int) bool { return events.Items[i].LastTimestamp.Before(&events.Items[j].LastTimestamp) })
		for _, e := range events.Items {
			fmt.Fprintf(&b, "event %s %s %s: %s\n", e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
		}
	}
	return b.String()
}

// podsOwnedBy lists the pods of the namespace whose controller has uid.
func (r rcJob) podsOwnedBy(uid types.UID) []corev1.Pod {
	r.t.Helper()
	list, err := r.w.kube.CoreV1().Pods(r.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == uid {
			out = append(out, p)
		}
	}
	return out
}

// A JobFlow deleted without waiting and made again while its predecessor's step Job lingers
// (held by the test's finalizer on the Job): the new flow does not take that Job as its step
// done, says it waits for it, and once it is gone makes and runs the step's Job of its own.
func init() {
	register(Case{Name: "a JobFlow re-created over its predecessor's lingering Job runs its own", Run: recreateFlow})
}

func recreateFlow(t *testing.T, w *world) {
	ctx := context.Background()
	ns := vcjob.Namespace(t, w.kube, "recreate-flow")
	flows, jobs := w.volcano.FlowV1alpha1().JobFlows(ns), w.volcano.BatchV1alpha1().Jobs(ns)
	tmpl := &flowv1.JobTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"},
		Spec:       batch.JobSpec{SchedulerName: "volcano", Tasks: []batch.TaskSpec{vcjob.Task("main", 1, "1s", "")}},
	}
	if _, err := w.volcano.FlowV1alpha1().JobTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	newFlow := func() *flowv1.JobFlow {
		jf := &flowv1.JobFlow{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etl"},
			Spec:       flowv1.JobFlowSpec{Flows: []flowv1.Flow{{Name: "a"}}, JobRetainPolicy: flowv1.Retain},
		}
		got, err := flows.Create(ctx, jf, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create jobflow etl: %v", err)
		}
		return got
	}
	waitSucceed := func(uid types.UID) {
		t.Helper()
		stack.WaitFor(t, "jobflow etl Succeed", 3*time.Minute, func() (bool, string) {
			jf, err := flows.Get(ctx, "etl", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return jf.UID == uid && jf.Status.State.Phase == flowv1.Succeed, fmt.Sprintf("uid %s phase %q", jf.UID, jf.Status.State.Phase)
		})
	}

	first := newFlow()
	waitSucceed(first.UID)
	old, err := jobs.Get(ctx, "etl-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"metadata":{"finalizers":[%q],"uid":%q}}`, holdFinalizer, old.UID)
	if _, err := jobs.Patch(ctx, old.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("hold job etl-a: %v", err)
	}
	var let sync.Once
	letGo := func() {
		let.Do(func() {
			patch := fmt.Sprintf(`{"metadata":{"finalizers":null,"uid":%q}}`, old.UID)
			if _, err := jobs.Patch(ctx, old.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("let go of job etl-a: %v", err)
			}
		})
	}
	t.Cleanup(letGo)
	if err := flows.Delete(ctx, "etl", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	stack.WaitUntil(t, "the first etl gone", time.Minute, func() bool {
		_, err := flows.Get(ctx, "etl", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	second := newFlow()

	wantWait := fmt.Sprintf("waiting for Job etl-a of an earlier JobFlow etl (uid %s)", first.UID)
	stack.WaitFor(t, "a JobNameTaken Event on the new etl", 2*time.Minute, func() (bool, string) {
		list, err := w.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=etl"})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.InvolvedObject.UID == second.UID && e.Reason == "JobNameTaken" && strings.Contains(e.Message, wantWait) {
				return true, ""
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, strings.Join(seen, "; ")
	})
	time.Sleep(held)
	jf, err := flows.Get(ctx, "etl", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if jf.Status.State.Phase == flowv1.Succeed || len(jf.Status.CompletedJobs) != 0 {
		t.Fatalf("while the earlier etl-a lingered the new flow was %q with completed jobs %v", jf.Status.State.Phase, jf.Status.CompletedJobs)
	}
	letGo()
	waitSucceed(second.UID)
	got, err := jobs.Get(ctx, "etl-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(got); got.UID == old.UID || ref == nil || ref.UID != second.UID {
		t.Errorf("etl-a (uid %s, earlier %s) is controlled by %v, want the new flow %s", got.UID, old.UID, ref, second.UID)
	}
}
