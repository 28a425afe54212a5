package job

import (
	"github.com/ringfire/ringfire/controllers/job/plan"

	"github.com/ringfire/ringfire/controllers/job/plugins"

	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/shard"
)

// earlierOf is job as it was before it was deleted and made again: same name, another UID.
func earlierOf(job *batch.Job) *batch.Job {
	e := job.DeepCopy()
	e.UID = types.UID("uid-earlier-" + job.Name)
	return e
}

// goingPod is pod as the garbage collector leaves it while a finalizer holds it: being deleted.
func goingPod(pod *corev1.Pod) *corev1.Pod {
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	pod.Finalizers = []string{"example.com/hold"}
	return pod
}

// writes lists the verbs and resources of the writes through kube, as "verb resource name".
func writes(kube *k8stesting.Fake) []string {
	var out []string
	for _, a := range kube.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		name := ""
		if n, ok := a.(interface{ GetName() string }); ok {
			name = n.GetName()
		} else if c, ok := a.(k8stesting.CreateAction); ok {
			name = c.GetObject().(metav1.Object).GetName()
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource+" "+name)
	}
	return out
}

// A Job deleted (without waiting) and made again while its predecessor's Succeeded pods are
// still there, held by a finalizer: the new Job counts none of them, creates none of their
// names, and tells once what it waits for; each pod the garbage collector deletes wakes it and
// frees a name it then creates. The earlier pods are never deleted by the Job.
func TestReCreatedJobWaitsForTheEarlierJobsPods(t *testing.T) {
	ctx := context.Background()
	job := testJob("rc", task("worker", 2))
	job.Status.State.Phase = batch.Pending
	earlier := earlierOf(job)
	f := newFixture(t, nil, job)
	f.admit(t, job)
	old := []*corev1.Pod{
		goingPod(podOf(earlier, "worker", 0, corev1.PodSucceeded)),
		goingPod(podOf(earlier, "worker", 1, corev1.PodSucceeded)),
	}
	for _, p := range old {
		f.cacheOwned(t, cache.Pods, p)
	}
	sync := request{Request: state.Request{Event: bus.OutOfSyncEvent}}

	for range 3 {
		if err := f.c.reconcile(ctx, "ns/rc", sync); err != nil {
			t.Fatal(err)
		}
	}
	if got := writes(&f.kube.Fake); len(got) != 0 {
		t.Fatalf("the Job wrote %v while every name it needs is held; want nothing", got)
	}
	got, err := f.vc.BatchV1alpha1().Jobs("ns").Get(ctx, "rc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := got.Status; st.State.Phase != batch.Pending || st.Succeeded != 0 || st.Terminating != 0 || st.Pending != 0 {
		t.Fatalf("status %s succeeded %d terminating %d pending %d; want Pending with no pod counted",
			st.State.Phase, st.Succeeded, st.Terminating, st.Pending)
	}
	events := f.recorded()
	var waits []string
	for _, e := range events {
		if strings.HasPrefix(e, "Normal "+ReasonWaitingForDeletion+" ") {
			waits = append(waits, e)
		}
	}
	want := "Normal WaitingForDeletion waiting for pod rc-worker-0 of an earlier Job rc (uid uid-earlier-rc) to be deleted by the garbage collector (and 1 more objects)"
	if len(waits) != 1 || waits[0] != want {
		t.Fatalf("wait events %q over three reconciles; want exactly [%q]", waits, want)
	}

	// The collector deletes rc-worker-0: its delete wakes the Job of the name.
	if err := f.cache.Owned(cache.Pods).Indexer().Delete(old[0]); err != nil {
		t.Fatal(err)
	}
	reqs := f.requestsOf(t, func() { f.c.onPodDelete(old[0]) })
	if len(reqs) != 1 || reqs[0].key != "ns/rc" {
		t.Fatalf("the earlier pod's delete enqueued %v, want one request for ns/rc", reqs)
	}
	if choice := state.ApplyPolicies(job, reqs[0].req.Request); choice.Action != bus.SyncJobAction {
		t.Fatalf("the earlier pod's delete chose %s for the new Job, want SyncJob", choice.Action)
	}
	f.kube.ClearActions()
	if err := f.c.reconcile(ctx, "ns/rc", sync); err != nil {
		t.Fatal(err)
	}
	if got := writes(&f.kube.Fake); !slices.Equal(got, []string{"create pods rc-worker-0"}) {
		t.Fatalf("after rc-worker-0 went the Job wrote %v, want only its create", got)
	}
	if hasEvent(f.recorded(), "Normal "+ReasonWaitingForDeletion) {
		t.Error("the same wait was told again")
	}
	// The last one goes: the wait is over, and a later wait would be told again.
	if err := f.cache.Owned(cache.Pods).Indexer().Delete(old[1]); err != nil {
		t.Fatal(err)
	}
	f.kube.ClearActions()
	if err := f.c.reconcile(ctx, "ns/rc", sync); err != nil {
		t.Fatal(err)
	}
	if got := writes(&f.kube.Fake); !slices.Equal(got, []string{"create pods rc-worker-1"}) {
		t.Fatalf("after rc-worker-1 went the Job wrote %v, want only its create", got)
	}
	_, still := f.c.memory.waiting.Get("ns/rc")
	if still {
		t.Error("the wait is still remembered with every name free")
	}
}

// A name held by a pod the cache does not hold (an earlier Job's pod without this replica's
// slot label): the create is refused as AlreadyExists, the pod read shows another owner, so
// it is not counted as created, its expectation is dropped, and the Job looks again later
// rather than at once.
func TestCreateRefusedByAnotherUIDsPodIsAWaitNotACreate(t *testing.T) {
	ctx := context.Background()
	job := testJob("rc", task("worker", 1))
	job.Status.State.Phase = batch.Pending
	f := newFixture(t, nil, job)
	f.admit(t, job)
	unseen := podOf(earlierOf(job), "worker", 0, corev1.PodSucceeded)
	if _, err := f.kube.CoreV1().Pods("ns").Create(ctx, unseen, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.kube.ClearActions()

	if err := f.c.reconcile(ctx, "ns/rc", request{Request: state.Request{Event: bus.OutOfSyncEvent}}); err != nil {
		t.Fatal(err)
	}
	if got := writes(&f.kube.Fake); !slices.Equal(got, []string{"create pods rc-worker-0"}) {
		t.Fatalf("writes %v, want the one refused create", got)
	}
	slot := shard.SlotOf("ns/rc", shard.DefaultSlots)
	if _, pending := f.cache.Expectations().Creating(slot, "ns/rc", cache.Pods, "ns", "rc-worker-0"); pending {
		t.Error("the create another UID's pod refused is still expected")
	}
	got, err := f.vc.BatchV1alpha1().Jobs("ns").Get(ctx, "rc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Pending != 0 || got.Status.Succeeded != 0 {
		t.Errorf("pending %d succeeded %d; the other Job's pod was counted", got.Status.Pending, got.Status.Succeeded)
	}
	if !hasEvent(f.recorded(), "Normal WaitingForDeletion waiting for pod rc-worker-0 of an earlier Job rc") {
		t.Error("no Event tells what the Job waits for")
	}
	at, scheduled := f.c.memory.wakes.At("ns/rc")
	if left := at.Sub(metav1.Now().Time); !scheduled || left < recheckForeign/2 {
		t.Errorf("next look scheduled %v, in %v; want one about %v away, not a hot retry", scheduled, left, recheckForeign)
	}
}

// The svc plugin's objects of an earlier Job of the name, in the cache: the new Job neither
// updates (Apply) nor reuses them, creates no pod that would mount them, and a kill of the new
// Job does not delete them: the garbage collector does.
func TestPluginObjectsOfAnotherUIDAreNeitherUpdatedNorDeleted(t *testing.T) {
	ctx := context.Background()
	job := testJob("rc", task("worker", 1))
	job.Spec.Plugins = map[string][]string{"svc": {}}
	job.Status.State.Phase = batch.Pending
	f := newFixture(t, nil, job)
	f.admit(t, job)
	earlier := earlierOf(job)
	yes := true
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("obj-" + name), ResourceVersion: "1",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "rc", UID: earlier.UID, Controller: &yes}}}
	}
	cm := &corev1.ConfigMap{ObjectMeta: meta("rc-svc"), Data: map[string]string{"worker.host": "stale"}}
	svc := &corev1.Service{ObjectMeta: meta("rc")}
	f.cacheOwned(t, cache.ConfigMaps, cm)
	f.cacheOwned(t, cache.Services, svc)

	if err := f.c.reconcile(ctx, "ns/rc", request{Request: state.Request{Event: bus.OutOfSyncEvent}}); err != nil {
		t.Fatal(err)
	}
	for _, w := range writes(&f.kube.Fake) {
		if strings.HasPrefix(w, "update ") || strings.HasPrefix(w, "delete ") || w == "create pods rc-worker-0" ||
			w == "create configmaps rc-svc" || w == "create services rc" {
			t.Errorf("wrote %q over or beside another UID's objects", w)
		}
	}
	// The Service is the plugin's first object written, the ConfigMap the second.
	want := "Normal WaitingForDeletion waiting for Service rc of an earlier Job rc (uid uid-earlier-rc) to be deleted by the garbage collector (and 1 more objects)"
	if got := f.recorded(); !slices.Contains(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	f.kube.ClearActions()
	set, err := plugins.ForJob(job, plugins.Env{})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := set.OnJobDelete(job.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.write(ctx, "ns/rc", job.UID, ch); err != nil {
		t.Fatal(err)
	}
	if got := writes(&f.kube.Fake); len(got) != 0 {
		t.Errorf("a kill of the new Job wrote %v; the earlier Job's objects are the garbage collector's", got)
	}
	// Their delete wakes the Job; the delete of one of its own does not.
	reqs := f.requestsOf(t, func() {
		f.c.onForeignDelete(cm)
		own := cm.DeepCopy()
		own.OwnerReferences[0].UID = job.UID
		f.c.onForeignDelete(own)
	})
	if len(reqs) != 1 || reqs[0].key != "ns/rc" {
		t.Errorf("deletes enqueued %v, want one request for ns/rc (the earlier Job's ConfigMap)", reqs)
	}
}

// What a wait says depends on whose the object is: an earlier Job of the name (the garbage
// collector's), another controller's, or nobody's.
func TestWaitMessage(t *testing.T) {
	job := testJob("rc", task("worker", 1))
	yes := true
	owned := func(kind, name string, uid types.UID) metav1.Object {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rc-worker-0", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: kind, Name: name, UID: uid, Controller: &yes,
		}}}}
	}
	for _, tc := range []struct {
		name string
		held []plan.Holder
		want string
	}{
		{"an earlier Job of the name", []plan.Holder{plan.HolderOf("pod", owned("Job", "rc", "old"), true)},
			"waiting for pod rc-worker-0 of an earlier Job rc (uid old) to be deleted by the garbage collector"},
		{"another controller's, and more", []plan.Holder{plan.HolderOf("pod", owned("StatefulSet", "db", "s1"), false), {Kind: "pod", Name: "x"}},
			"waiting for pod rc-worker-0, controlled by StatefulSet db (uid s1), to be deleted: this Job needs its name (and 1 more objects)"},
		{"nobody's", []plan.Holder{plan.HolderOf("pod", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rc-worker-0"}}, false)},
			"waiting for pod rc-worker-0, which no controller owns, to be deleted: this Job needs its name"},
	} {
		if got := plan.WaitMessage(job, tc.held); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
