package cache

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ringfire/ringfire/shard"
)

// clock is a settable time for the expectations' lapse.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestExpectations(ttl time.Duration) (*Expectations, *clock) {
	clk := &clock{t: time.Unix(1_000_000, 0)}
	e := NewExpectations(ttl)
	e.now = clk.now
	return e, clk
}

// jobPod is pod name of Job "ns/job" in slot, with the given UID.
func jobPod(slot int, name string, uid types.UID) *corev1.Pod {
	yes := true
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, UID: uid,
		Labels: map[string]string{shard.SlotLabel: strconv.Itoa(slot)},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "job", UID: "job-uid", Controller: &yes,
		}},
	}}
}

func TestExpectationsCreateSeen(t *testing.T) {
	e, _ := newTestExpectations(time.Minute)
	obs := observer{r: Pods, e: e}
	e.ExpectCreate(7, "ns/job", Pods, "ns", "job-w-0")
	if _, ok := e.Creating(7, "ns/job", Pods, "ns", "job-w-0"); !ok {
		t.Fatal("a create just issued is not pending")
	}
	if _, ok := e.Creating(7, "ns/job", Pods, "ns", "job-w-1"); ok {
		t.Fatal("another pod's create is pending")
	}
	obs.OnAdd(jobPod(7, "job-w-0", "a"), false)
	if _, ok := e.Creating(7, "ns/job", Pods, "ns", "job-w-0"); ok {
		t.Fatal("a create the cache has seen is still pending")
	}
	if e.len() != 0 {
		t.Fatalf("%d expectations left, want 0", e.len())
	}
	e.ExpectCreate(7, "ns/job", Pods, "ns", "job-w-1")
	e.CreateFailed(7, "ns/job", Pods, "ns", "job-w-1")
	if _, ok := e.Creating(7, "ns/job", Pods, "ns", "job-w-1"); ok {
		t.Fatal("a failed create is still pending")
	}
}

// A delete is seen when the object is marked for deletion or leaves; a new
// object of the same name is not the deleted one.
func TestExpectationsDeleteSeenByUID(t *testing.T) {
	e, _ := newTestExpectations(time.Minute)
	obs := observer{r: Pods, e: e}
	old := jobPod(3, "job-w-0", "old")
	e.ExpectDelete(3, "ns/job", Pods, "ns", "job-w-0", "old")
	if _, ok := e.Deleting(3, "ns/job", Pods, "ns", "job-w-0", "old"); !ok {
		t.Fatal("a delete just issued is not pending")
	}
	if _, ok := e.Deleting(3, "ns/job", Pods, "ns", "job-w-0", "new"); ok {
		t.Fatal("the delete of the old pod holds a new pod of the same name")
	}
	obs.OnUpdate(old, old) // an unrelated update: still not seen
	if _, ok := e.Deleting(3, "ns/job", Pods, "ns", "job-w-0", "old"); !ok {
		t.Fatal("an update without a deletion timestamp met the delete")
	}
	going := old.DeepCopy()
	going.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	obs.OnUpdate(old, going)
	if _, ok := e.Deleting(3, "ns/job", Pods, "ns", "job-w-0", "old"); ok {
		t.Fatal("a pod marked for deletion still has its delete pending")
	}
}

// An update is seen when the cached object shows what it was for, or leaves;
// other updates of the object, and another object of the name, do not meet it.
func TestExpectationsUpdateSeenWhenDone(t *testing.T) {
	e, _ := newTestExpectations(time.Minute)
	obs := observer{r: Pods, e: e}
	pod := jobPod(4, "job-w-0", "a")
	pod.Finalizers = []string{"f"}
	unfinalized := func(o metav1.Object) bool { return len(o.GetFinalizers()) == 0 }
	e.ExpectUpdate(4, "ns/job", Pods, "ns", "job-w-0", "a", unfinalized)
	if _, ok := e.Updating(4, "ns/job", Pods, "ns", "job-w-0", "a"); !ok {
		t.Fatal("an update just issued is not pending")
	}
	obs.OnUpdate(pod, pod) // another change of the pod, the finalizer still on
	other := jobPod(4, "job-w-0", "b")
	obs.OnAdd(other, false) // another pod of the name, without the finalizer
	if _, ok := e.Updating(4, "ns/job", Pods, "ns", "job-w-0", "a"); !ok {
		t.Fatal("the update was met by a change that is not it")
	}
	done := pod.DeepCopy()
	done.Finalizers = nil
	obs.OnUpdate(pod, done)
	if _, ok := e.Updating(4, "ns/job", Pods, "ns", "job-w-0", "a"); ok {
		t.Fatal("an update the cache shows done is still pending")
	}
	e.ExpectUpdate(4, "ns/job", Pods, "ns", "job-w-0", "a", unfinalized)
	obs.OnDelete(pod)
	if _, ok := e.Updating(4, "ns/job", Pods, "ns", "job-w-0", "a"); ok {
		t.Fatal("the update of a pod that left is still pending")
	}
	e.ExpectUpdate(4, "ns/job", Pods, "ns", "job-w-0", "a", unfinalized)
	e.UpdateFailed(4, "ns/job", Pods, "ns", "job-w-0", "a")
	if e.len() != 0 {
		t.Fatalf("%d expectations left after a failed update, want 0", e.len())
	}
}

// A controller feeds the expectations of the VolcanoJobs it makes: they carry
// no slot label, so the cache's observers never see them.
func TestExpectationsObservedByTheController(t *testing.T) {
	e, _ := newTestExpectations(time.Minute)
	job := &metav1.ObjectMeta{Namespace: "ns", Name: "flow-a", UID: "j"}
	e.ExpectCreate(9, "ns/flow", VolcanoJobs, "ns", "flow-a")
	e.Observed(9, "ns/flow", VolcanoJobs, job, false)
	if _, ok := e.Creating(9, "ns/flow", VolcanoJobs, "ns", "flow-a"); ok {
		t.Fatal("a create the controller saw is still pending")
	}
	e.ExpectDelete(9, "ns/flow", VolcanoJobs, "ns", "flow-a", "j")
	going := job.DeepCopy()
	going.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	e.Observed(9, "ns/flow", VolcanoJobs, going, false)
	if _, ok := e.Deleting(9, "ns/flow", VolcanoJobs, "ns", "flow-a", "j"); ok {
		t.Fatal("a Job marked for deletion still has its delete pending")
	}
}

// An observation the cache never makes (say, an object created and deleted
// again inside a watch gap) holds a Job up for the TTL at most.
func TestExpectationsLapse(t *testing.T) {
	e, clk := newTestExpectations(30 * time.Second)
	e.ExpectCreate(1, "ns/job", Pods, "ns", "job-w-0")
	clk.t = clk.t.Add(20 * time.Second)
	left, ok := e.Creating(1, "ns/job", Pods, "ns", "job-w-0")
	if !ok || left != 10*time.Second {
		t.Fatalf("after 20 s of 30: pending %v with %v left, want 10s left", ok, left)
	}
	clk.t = clk.t.Add(10 * time.Second)
	if _, ok := e.Creating(1, "ns/job", Pods, "ns", "job-w-0"); ok {
		t.Fatal("the expectation outlived its TTL")
	}
	if e.len() != 0 {
		t.Fatalf("a lapsed expectation is still held (%d)", e.len())
	}
	if e.Lapsed() != 1 {
		t.Fatalf("Lapsed() = %d after one lapse, want 1", e.Lapsed())
	}
	// Many lapsed ones in a busy slot are pruned as new ones come.
	for i := range 300 {
		e.ExpectCreate(2, "ns/job", Pods, "ns", "p-"+strconv.Itoa(i))
	}
	clk.t = clk.t.Add(time.Minute)
	for i := range 256 {
		e.ExpectCreate(2, "ns/job", Pods, "ns", "q-"+strconv.Itoa(i))
	}
	if n := e.len(); n > 256 {
		t.Fatalf("%d expectations held, the 300 lapsed ones were not pruned", n)
	}
	if e.Lapsed() != 301 {
		t.Fatalf("Lapsed() = %d, want 301 (1 + the 300 pruned)", e.Lapsed())
	}
}

// The expectations of the Owned resources of a slot whose objects are being
// listed since its gain do not lapse, nor are pruned, until Release, which gives each a full TTL
// from then; a slot never held, or released, lapses as before, and a slot
// lost and gained again is held anew.
func TestExpectationsHeldWhileTheSlotLists(t *testing.T) {
	e, clk := newTestExpectations(30 * time.Second)
	e.DropSlots([]int{1})
	e.Hold([]int{1})
	e.ExpectCreate(1, "ns/job", Pods, "ns", "job-w-0")
	e.ExpectDelete(1, "ns/job", Pods, "ns", "job-w-1", "uid-1")
	e.ExpectCreate(2, "ns/other", Pods, "ns", "other-w-0")
	e.ExpectCreate(1, "ns/flow", VolcanoJobs, "ns", "flow-step") // a JobFlow's: not the list's to meet
	clk.t = clk.t.Add(time.Minute)
	if _, ok := e.Creating(1, "ns/flow", VolcanoJobs, "ns", "flow-step"); ok {
		t.Fatal("a create of a Volcano Job, which no slot's list brings, was held past its TTL")
	}
	if _, ok := e.Creating(1, "ns/job", Pods, "ns", "job-w-0"); !ok {
		t.Fatal("a create of a slot still listing lapsed")
	}
	if _, ok := e.CreatingAny(1, "ns/job", Pods); !ok {
		t.Fatal("CreatingAny: a create of a slot still listing lapsed")
	}
	if _, ok := e.Creating(2, "ns/other", Pods, "ns", "other-w-0"); ok {
		t.Fatal("a create of a slot not held outlived its TTL")
	}
	for i := range 256 { // enough to prune: nothing of the held slot goes
		e.ExpectCreate(1, "ns/job", Pods, "ns", "p-"+strconv.Itoa(i))
	}
	clk.t = clk.t.Add(time.Minute)
	e.Release([]int{1})
	clk.t = clk.t.Add(29 * time.Second)
	if left, ok := e.Deleting(1, "ns/job", Pods, "ns", "job-w-1", "uid-1"); !ok || left != time.Second {
		t.Fatalf("29 s after the release: pending %v with %v left, want 1s left", ok, left)
	}
	clk.t = clk.t.Add(time.Second)
	if _, ok := e.Creating(1, "ns/job", Pods, "ns", "job-w-0"); ok {
		t.Fatal("a create outlived its TTL after the release")
	}
	if _, ok := e.CreatingAny(1, "ns/job", Pods); ok {
		t.Fatal("CreatingAny: creates outlived their TTL after the release")
	}

	e.Hold([]int{3})
	e.ExpectCreate(3, "ns/job", Pods, "ns", "x")
	e.DropSlots([]int{3}) // lost
	e.ExpectCreate(3, "ns/job", Pods, "ns", "y")
	clk.t = clk.t.Add(time.Minute)
	if _, ok := e.Creating(3, "ns/job", Pods, "ns", "y"); ok {
		t.Fatal("a slot lost while listing still holds its expectations")
	}
}

// An expectation of a resource the cache does not watch (a Secret) stands for
// the object until it lapses or is forgotten, and its lapse is not counted:
// no observation was ever coming.
func TestExpectationsOfUnwatchedResources(t *testing.T) {
	e, clk := newTestExpectations(30 * time.Second)
	e.ExpectCreate(1, "ns/job", Secrets, "ns", "job-ssh")
	if _, ok := e.Creating(1, "ns/job", Secrets, "ns", "job-ssh"); !ok {
		t.Fatal("the Secret's create is not remembered")
	}
	e.CreateFailed(1, "ns/job", Secrets, "ns", "job-ssh") // deleted by a kill
	if _, ok := e.Creating(1, "ns/job", Secrets, "ns", "job-ssh"); ok {
		t.Fatal("the Secret's create is remembered after it was forgotten")
	}
	e.ExpectCreate(1, "ns/job", Secrets, "ns", "job-ssh")
	clk.t = clk.t.Add(30 * time.Second)
	if _, ok := e.Creating(1, "ns/job", Secrets, "ns", "job-ssh"); ok {
		t.Fatal("the expectation outlived its TTL")
	}
	for i := range 256 {
		e.ExpectCreate(2, "ns/job", Secrets, "ns", "s-"+strconv.Itoa(i))
	}
	clk.t = clk.t.Add(time.Minute)
	for i := range 256 {
		e.ExpectCreate(2, "ns/job", Secrets, "ns", "t-"+strconv.Itoa(i))
	}
	if e.Lapsed() != 0 {
		t.Fatalf("Lapsed() = %d, want 0: no observation of a Secret was ever due", e.Lapsed())
	}
}

// Losing a slot forgets its expectations and only its: the next owner lists
// the slot afresh.
func TestExpectationsDroppedWithTheSlot(t *testing.T) {
	e, _ := newTestExpectations(time.Minute)
	e.ExpectCreate(1, "ns/a", Pods, "ns", "a-w-0")
	e.ExpectCreate(2, "ns/b", Pods, "ns", "b-w-0")
	e.DropSlots([]int{1})
	if _, ok := e.Creating(1, "ns/a", Pods, "ns", "a-w-0"); ok {
		t.Fatal("slot 1's expectation survived its loss")
	}
	if _, ok := e.Creating(2, "ns/b", Pods, "ns", "b-w-0"); !ok {
		t.Fatal("slot 2's expectation went with slot 1")
	}
}

// staticList lists a fixed set of pods and watches nothing.
func staticList(pods func() []corev1.Pod) ListWatchFunc {
	return ListWatchFunc{
		List: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: pods()}, nil
		},
		Watch: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}
}

// After a watch gap the reflector lists again: objects created meanwhile
// meet their creates, objects deleted meanwhile meet their deletes.
func TestExpectationsMetByARelist(t *testing.T) {
	e, _ := newTestExpectations(time.Minute)
	s := NewSharded("pods", func() runtime.Object { return &corev1.Pod{} },
		staticList(func() []corev1.Pod { return nil }), hclog.NewNullLogger())
	s.AddHandler(observer{r: Pods, e: e})
	b := &slotBatch{slots: map[int]bool{5: true}}
	s.owned[5], s.batches[b] = true, true
	store := &batchStore{s: s, b: b}

	stays := jobPod(5, "job-w-0", "u0")
	if err := store.Replace([]any{stays}, "1"); err != nil {
		t.Fatal(err)
	}
	e.ExpectDelete(5, "ns/job", Pods, "ns", "job-w-0", "u0")
	e.ExpectCreate(5, "ns/job", Pods, "ns", "job-w-1")
	// The watch breaks; the relist has job-w-1 and no longer job-w-0.
	if err := store.Replace([]any{jobPod(5, "job-w-1", "u1")}, "2"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Creating(5, "ns/job", Pods, "ns", "job-w-1"); ok {
		t.Error("the relist brought the created pod, but its create is still pending")
	}
	if _, ok := e.Deleting(5, "ns/job", Pods, "ns", "job-w-0", "u0"); ok {
		t.Error("the relist no longer has the deleted pod, but its delete is still pending")
	}
}

// A view of a Job taken just before its pod reached the cache, and the
// expectation checked just after it was met: the cache must still say the
// create is not to be issued again, for the pod is in the cache.
func TestCreatingCountsAPodThatArrivedAfterTheView(t *testing.T) {
	c := New(Config{})
	view, err := c.OwnedBy(Pods, "ns/job", "job-uid") // the reconcile's view: no pod yet
	if err != nil || len(view) != 0 {
		t.Fatalf("view %v, %v; want no pods", view, err)
	}
	c.expect.ExpectCreate(3, "ns/job", Pods, "ns", "job-w-0")
	// The pod arrives: stored, then its expectation met, as the cache does.
	pod := jobPod(3, "job-w-0", "u0")
	if err := c.owned[Pods].Indexer().Add(pod); err != nil {
		t.Fatal(err)
	}
	observer{r: Pods, e: c.expect}.OnAdd(pod, false)
	if _, pending := c.expect.Creating(3, "ns/job", Pods, "ns", "job-w-0"); pending {
		t.Fatal("the expectation was not met")
	}
	if left, pending := c.Creating(3, "ns/job", Pods, "ns", "job-w-0"); !pending || left != 0 {
		t.Errorf("Creating = %v, %v for a pod in the cache; want 0, true", left, pending)
	}
	if _, pending := c.Creating(3, "ns/job", Pods, "ns", "job-w-1"); pending {
		t.Error("a pod neither expected nor cached is reported as being created")
	}
	c.expect.ExpectCreate(3, "ns/job", Pods, "ns", "job-w-1")
	if left, pending := c.Creating(3, "ns/job", Pods, "ns", "job-w-1"); !pending || left <= 0 {
		t.Errorf("Creating = %v, %v for an expected pod; want its time left, true", left, pending)
	}
}

// CreatingAny is pending while any create of the Job's objects of that
// resource is unseen, for as long as the latest-lapsing of them; not for
// deletes, other Jobs or other resources.
func TestExpectationsCreatingAny(t *testing.T) {
	e, clk := newTestExpectations(30 * time.Second)
	obs := observer{r: Pods, e: e}
	if _, ok := e.CreatingAny(7, "ns/job", Pods); ok {
		t.Fatal("pending with nothing expected")
	}
	e.ExpectCreate(7, "ns/job", Pods, "ns", "job-w-0")
	clk.t = clk.t.Add(10 * time.Second)
	e.ExpectCreate(7, "ns/job", Pods, "ns", "job-w-1")
	e.ExpectCreate(7, "ns/other", Pods, "ns", "other-w-0")
	e.ExpectCreate(7, "ns/job", PodGroups, "ns", "job")
	e.ExpectDelete(7, "ns/job", Pods, "ns", "job-w-9", "old")
	if left, ok := e.CreatingAny(7, "ns/job", Pods); !ok || left != 30*time.Second {
		t.Fatalf("two creates unseen: pending %v with %v left, want 30s (the later one)", ok, left)
	}
	obs.OnAdd(jobPod(7, "job-w-1", "a"), false)
	if left, ok := e.CreatingAny(7, "ns/job", Pods); !ok || left != 20*time.Second {
		t.Fatalf("one create unseen: pending %v with %v left, want 20s", ok, left)
	}
	obs.OnAdd(jobPod(7, "job-w-0", "b"), false)
	if _, ok := e.CreatingAny(7, "ns/job", Pods); ok {
		t.Fatal("pending after every create was seen (a delete, another Job's and another kind's are not its creates)")
	}
	e.ExpectCreate(7, "ns/job", Pods, "ns", "job-w-2")
	clk.t = clk.t.Add(30 * time.Second)
	lapsed := e.Lapsed()
	if _, ok := e.CreatingAny(7, "ns/job", Pods); ok {
		t.Fatal("a lapsed create is pending")
	}
	if e.Lapsed() != lapsed+1 {
		t.Fatalf("Lapsed() = %d, want %d", e.Lapsed(), lapsed+1)
	}
}
