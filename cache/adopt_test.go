package cache

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/shard"
)

const testSlots = 16

// objMeta is the metadata of an object of kind in group version gv, named name, controlled by
// the Volcano Job job (of UID "uid-<job>") when job is not "", with labels.
func objMeta(gv, kind, name, job string, labels map[string]string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: gv, Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-obj-" + kind + "-" + name), Labels: labels},
	}
	if job != "" {
		yes := true
		m.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: job, UID: types.UID("uid-" + job), Controller: &yes,
		}}
	}
	return m
}

// slotOfJob is the slot of Job ns/name.
func slotOfJob(name string) int { return shard.SlotOf("ns/"+name, testSlots) }

// jobsIn returns two Job names of slot a and one of another slot.
func jobsIn(t *testing.T) (held1, held2, other string) {
	t.Helper()
	byslot := map[int][]string{}
	for i := 0; i < 1000; i++ {
		name := fmt.Sprintf("job-%d", i)
		byslot[slotOfJob(name)] = append(byslot[slotOfJob(name)], name)
	}
	var a, b int = -1, -1
	for n, names := range byslot {
		if len(names) >= 2 && a < 0 {
			a = n
		} else if b < 0 && n != a {
			b = n
		}
	}
	if a < 0 || b < 0 {
		t.Fatal("no two slots with Jobs")
	}
	return byslot[a][0], byslot[a][1], byslot[b][0]
}

func TestAdoptSweepLabelsOnlyUnlabelledChildrenOfHeldJobs(t *testing.T) {
	held1, held2, other := jobsIn(t)
	slot := slotOfJob(held1)
	jobLabel := map[string]string{batch.JobNameKey: held1}
	objs := []runtime.Object{
		// Volcano's objects of held1: to adopt.
		objMeta("v1", "Pod", held1+"-worker-0", held1, jobLabel),
		objMeta("v1", "Pod", held1+"-worker-1", held1, jobLabel),
		objMeta("scheduling.volcano.sh/v1beta1", "PodGroup", held1+"-uid", held1, map[string]string{"team": "a"}),
		objMeta("v1", "Service", held1, held1, nil),
		objMeta("v1", "ConfigMap", held1+"-svc", held1, nil),
		objMeta("networking.k8s.io/v1", "NetworkPolicy", held1, held1, nil),
		objMeta("v1", "PersistentVolumeClaim", held1+"-abc", held1, nil),
		// Its Secret: reached by name, never listed, so not swept.
		objMeta("v1", "Secret", held1+"-ssh", held1, nil),
		// Already labelled: left alone.
		objMeta("v1", "Pod", held2+"-worker-0", held2, map[string]string{batch.JobNameKey: held2, shard.SlotLabel: fmt.Sprint(slot)}),
		// A pod of a Job re-created since (another UID): the garbage collector's.
		objMeta("v1", "Pod", held2+"-worker-1", held2, map[string]string{batch.JobNameKey: held2}),
		// Another slot's Job: its owner adopts it.
		objMeta("v1", "Pod", other+"-worker-0", other, map[string]string{batch.JobNameKey: other}),
		// Not a Job's: a ConfigMap of nobody, a pod without the job label.
		objMeta("v1", "ConfigMap", "kube-root-ca.crt", "", nil),
		objMeta("v1", "Pod", "bare", "", nil),
	}
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	md := metadatafake.NewSimpleMetadataClient(scheme, objs...)
	c := New(Config{Kube: kubefake.NewSimpleClientset(), Volcano: vcfake.NewSimpleClientset(), Metadata: md, Slots: func() int { return testSlots }})
	for _, j := range []struct{ name, uid string }{{held1, "uid-" + held1}, {held2, "uid-other-incarnation"}, {other, "uid-" + other}} {
		if err := c.jobs.indexer.Add(&batch.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: j.name, UID: types.UID(j.uid)}}); err != nil {
			t.Fatal(err)
		}
	}
	c.unlisted[slot], c.gen[slot] = 1<<adoptBit, 1

	got := c.adopt.sweep(context.Background(), map[int]uint64{slot: 1})

	var keys []string
	for _, o := range got {
		keys = append(keys, string(o.r)+" "+o.key)
		if o.slot != slot {
			t.Errorf("%s %s labelled with slot %d, want %d", o.r, o.key, o.slot, slot)
		}
	}
	slices.Sort(keys)
	want := []string{
		"configmaps ns/" + held1 + "-svc",
		"networkpolicies ns/" + held1,
		"persistentvolumeclaims ns/" + held1 + "-abc",
		"podgroups ns/" + held1 + "-uid",
		"pods ns/" + held1 + "-worker-0",
		"pods ns/" + held1 + "-worker-1",
		"services ns/" + held1,
	}
	if !slices.Equal(keys, want) {
		t.Errorf("labelled\n%v\nwant\n%v", keys, want)
	}

	// What went to the API server: one list per resource with the selector, and one merge
	// patch of the label and UID per adopted object.
	var lists, patches int
	for _, a := range md.Actions() {
		switch a := a.(type) {
		case clienttesting.ListAction:
			lists++
			sel := a.GetListRestrictions().Labels.String()
			wantSel, err := labels.Parse(AdoptSelector(Resource(a.GetResource().Resource)))
			if err != nil || sel != wantSel.String() {
				t.Errorf("list %s with selector %q, want %q", a.GetResource().Resource, sel, wantSel)
			}
		case clienttesting.PatchAction:
			patches++
			if a.GetPatchType() != types.MergePatchType {
				t.Errorf("patch of %s is %s, want a merge patch", a.GetName(), a.GetPatchType())
			}
			wantBody := fmt.Sprintf(`{"metadata":{"labels":{%q:"%d"},"uid":"uid-obj-`, shard.SlotLabel, slot)
			if body := string(a.GetPatch()); len(body) < len(wantBody) || body[:len(wantBody)] != wantBody {
				t.Errorf("patch of %s is %s, want it to start %s", a.GetName(), body, wantBody)
			}
		default:
			t.Errorf("unexpected request %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if lists != len(Owned) || patches != len(want) {
		t.Errorf("%d lists and %d patches, want %d and %d", lists, patches, len(Owned), len(want))
	}
	if s := c.AdoptStats(); s.Adopted != uint64(len(want)) || s.Patches != uint64(len(want)) || s.Sweeps != 1 {
		t.Errorf("stats %+v", s)
	}

	// Swept again (a later gain): nothing is left to adopt, and only the lists are paid for.
	md.ClearActions()
	if got := c.adopt.sweep(context.Background(), map[int]uint64{slot: 1}); len(got) != 0 {
		t.Errorf("second sweep labelled %d objects, want none", len(got))
	}
	if n := len(md.Actions()); n != len(Owned) {
		t.Errorf("second sweep made %d requests, want %d lists", n, len(Owned))
	}
}

func TestAdoptSweepSkipsSlotsNoLongerHeld(t *testing.T) {
	held1, _, _ := jobsIn(t)
	slot := slotOfJob(held1)
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	md := metadatafake.NewSimpleMetadataClient(scheme,
		objMeta("v1", "Pod", held1+"-worker-0", held1, map[string]string{batch.JobNameKey: held1}))
	c := New(Config{Kube: kubefake.NewSimpleClientset(), Volcano: vcfake.NewSimpleClientset(), Metadata: md, Slots: func() int { return testSlots }})
	if err := c.jobs.indexer.Add(&batch.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: held1, UID: types.UID("uid-" + held1)}}); err != nil {
		t.Fatal(err)
	}
	c.gen[slot] = 2 // gained again since the sweep was asked for; and not pending: lost
	if got := c.adopt.sweep(context.Background(), map[int]uint64{slot: 1}); len(got) != 0 {
		t.Errorf("labelled %d objects of a slot no longer held by that gain", len(got))
	}
	for _, a := range md.Actions() {
		if a.GetVerb() == "patch" {
			t.Errorf("patched %s", a.(clienttesting.PatchAction).GetName())
		}
	}
}

func TestAdoptSweepIsFenced(t *testing.T) {
	held1, _, _ := jobsIn(t)
	slot := slotOfJob(held1)
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	md := metadatafake.NewSimpleMetadataClient(scheme,
		objMeta("v1", "Pod", held1+"-worker-0", held1, map[string]string{batch.JobNameKey: held1}))
	c := New(Config{Kube: kubefake.NewSimpleClientset(), Volcano: vcfake.NewSimpleClientset(), Metadata: md,
		Slots: func() int { return testSlots }, Valid: func() error { return fmt.Errorf("past the fence deadline") }})
	if err := c.jobs.indexer.Add(&batch.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: held1, UID: types.UID("uid-" + held1)}}); err != nil {
		t.Fatal(err)
	}
	c.unlisted[slot], c.gen[slot] = 1<<adoptBit, 1
	if got := c.adopt.sweep(context.Background(), map[int]uint64{slot: 1}); len(got) != 0 {
		t.Errorf("labelled %d objects past the fence", len(got))
	}
	for _, a := range md.Actions() {
		if a.GetVerb() == "patch" {
			t.Errorf("patched %s past the fence", a.(clienttesting.PatchAction).GetName())
		}
	}
}

// A gained slot is ready only once its adoption sweep is done, besides its lists; a sweep done
// for an earlier gain of the slot does not make a later gain ready.
func TestSlotReadyWaitsForAdoption(t *testing.T) {
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ready := make(chan []int, 8)
	c := New(Config{Kube: kubefake.NewSimpleClientset(), Volcano: vcfake.NewSimpleClientset(),
		Metadata: metadatafake.NewSimpleMetadataClient(scheme), Slots: func() int { return testSlots },
		SlotsReady: func(slots []int) { ready <- slots }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Not started: the test stands in for the lists and the adopter's loop.
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()
	listAll := func() {
		for i := 0; i <= jobsBit; i++ {
			c.listed(i, []int{3})
		}
	}

	c.SlotsGained([]int{3})
	listAll()
	c.mu.Lock()
	left := c.unlisted[3]
	c.mu.Unlock()
	if left != 1<<adoptBit {
		t.Fatalf("slot 3 waits for %b after its lists, want only the adoption bit %b", left, 1<<adoptBit)
	}
	select {
	case got := <-ready:
		t.Fatalf("slots %v ready before their sweep", got)
	default:
	}

	c.SlotsLost([]int{3})
	c.SlotsGained([]int{3}) // generation 2
	listAll()
	c.adoptedSlots(map[int]uint64{3: 1})
	select {
	case got := <-ready:
		t.Fatalf("the sweep of an earlier gain made slots %v ready", got)
	default:
	}
	c.adoptedSlots(map[int]uint64{3: 2})
	select {
	case got := <-ready:
		if !slices.Equal(got, []int{3}) {
			t.Fatalf("ready %v, want [3]", got)
		}
	default:
		t.Fatal("slot 3 not ready after its lists and its sweep")
	}
}

// A sweep waits for what it labelled to reach the index, but not for an object of a slot whose
// gain is over, nor for pods: a slot's pods are listed only after its sweep.
func TestAdoptAwaitsTheIndex(t *testing.T) {
	c := New(Config{Kube: kubefake.NewSimpleClientset(), Volcano: vcfake.NewSimpleClientset(),
		Metadata: metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme()), Slots: func() int { return testSlots }})
	c.unlisted[1], c.gen[1] = 1<<adoptBit|1<<podsBit, 1
	c.unlisted[2], c.gen[2] = 1<<adoptBit|1<<podsBit, 1
	gens := map[int]uint64{1: 1, 2: 1}

	podsOnly := make(chan struct{})
	go func() {
		c.adopt.awaitIndex(context.Background(), gens, []labelled{{r: Pods, key: "ns/p", slot: 1}})
		close(podsOnly)
	}()
	select {
	case <-podsOnly:
	case <-time.After(10 * time.Second):
		t.Fatal("waited for labelled pods, which the slot lists only after the sweep")
	}

	objs := []labelled{{r: Services, key: "ns/a", slot: 1}, {r: Services, key: "ns/b", slot: 2}, {r: Pods, key: "ns/p", slot: 1}}
	done := make(chan struct{})
	go func() { c.adopt.awaitIndex(context.Background(), gens, objs); close(done) }()
	select {
	case <-done:
		t.Fatal("returned before the labelled Services reached the index")
	case <-time.After(200 * time.Millisecond):
	}
	if err := c.owned[Services].Indexer().Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	delete(c.unlisted, 2) // slot 2 lost: its Service is its next owner's
	c.mu.Unlock()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting with one Service in the index, the other's slot lost, and a pod the slot lists later")
	}
}

// A list that fails is tried again while the slot is held; a kind the replica may not list is
// skipped, and the others are still adopted.
func TestAdoptSweepRetriesAndSkipsForbidden(t *testing.T) {
	held1, _, _ := jobsIn(t)
	slot := slotOfJob(held1)
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	md := metadatafake.NewSimpleMetadataClient(scheme,
		objMeta("v1", "Pod", held1+"-worker-0", held1, map[string]string{batch.JobNameKey: held1}),
		objMeta("networking.k8s.io/v1", "NetworkPolicy", held1, held1, nil))
	failures := 2
	md.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failures > 0 {
			failures--
			return true, nil, apierrors.NewInternalError(fmt.Errorf("etcd is away"))
		}
		return false, nil, nil
	})
	md.PrependReactor("list", "networkpolicies", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "networking.k8s.io", Resource: "networkpolicies"}, "", fmt.Errorf("no"))
	})
	c := New(Config{Kube: kubefake.NewSimpleClientset(), Volcano: vcfake.NewSimpleClientset(), Metadata: md, Slots: func() int { return testSlots }})
	if err := c.jobs.indexer.Add(&batch.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: held1, UID: types.UID("uid-" + held1)}}); err != nil {
		t.Fatal(err)
	}
	c.unlisted[slot], c.gen[slot] = 1<<adoptBit, 1
	got := c.adopt.sweep(context.Background(), map[int]uint64{slot: 1})
	if len(got) != 1 || got[0].r != Pods {
		t.Errorf("labelled %v, want the pod alone (its list failed twice, the network policies' is forbidden)", got)
	}
}

// A list that timed out and then found nothing unlabelled leaves the cluster clean: the next
// gains are not swept (at 100,000 pods a first sweep's list can outlive the request timeout,
// and a replica that then swept at every gain put seconds on each failover).
func TestAdoptCleanAfterARetriedList(t *testing.T) {
	held1, _, _ := jobsIn(t)
	slot := slotOfJob(held1)
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	md := metadatafake.NewSimpleMetadataClient(scheme)
	failures := 1
	md.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failures > 0 {
			failures--
			return true, nil, apierrors.NewTimeoutError("the server was unable to return a response in the time allotted", 1)
		}
		return false, nil, nil
	})
	c := New(Config{Kube: kubefake.NewSimpleClientset(), Volcano: vcfake.NewSimpleClientset(), Metadata: md, Slots: func() int { return testSlots }})
	c.unlisted[slot], c.gen[slot] = 1<<adoptBit, 1
	if got := c.adopt.sweep(context.Background(), map[int]uint64{slot: 1}); len(got) != 0 {
		t.Fatalf("labelled %v in a cluster with nothing to adopt", got)
	}
	if failures != 0 || !c.AdoptStats().Clean {
		t.Fatalf("after a list that failed once (%d failures left) and then found nothing: clean %v, want true", failures, c.AdoptStats().Clean)
	}
}

// A sweep waits until the Jobs of its slots are listed (it keeps only objects whose Job is in
// the cache), but not for a slot whose gain is over.
func TestAdoptAwaitsTheJobs(t *testing.T) {
	c := New(Config{Kube: kubefake.NewSimpleClientset(), Volcano: vcfake.NewSimpleClientset(),
		Metadata: metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme()), Slots: func() int { return testSlots }})
	c.unlisted[1], c.gen[1] = 1<<jobsBit|1<<adoptBit, 1
	c.unlisted[2], c.gen[2] = 1<<jobsBit|1<<adoptBit, 1
	gens := map[int]uint64{1: 1, 2: 1}
	done := make(chan bool)
	go func() { done <- c.adopt.awaitJobs(context.Background(), gens) }()

	select {
	case <-done:
		t.Fatal("returned before the Jobs of the slots were listed")
	case <-time.After(200 * time.Millisecond):
	}
	c.listed(jobsBit, []int{1})
	select {
	case <-done:
		t.Fatal("returned with slot 2's Jobs not listed")
	case <-time.After(200 * time.Millisecond):
	}
	c.SlotsLost([]int{2})
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("awaitJobs = false with its context alive")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting with slot 1's Jobs listed and slot 2 lost")
	}

	ctx, cancel := context.WithCancel(context.Background())
	c.unlisted[3], c.gen[3] = 1<<jobsBit, 1
	go func() { done <- c.adopt.awaitJobs(ctx, map[int]uint64{3: 1}) }()
	cancel()
	if ok := <-done; ok {
		t.Fatal("awaitJobs = true after its context ended")
	}
}

// The ring marks a slot held, and the dispatcher runs its work, a moment before the cache
// hears of the gain: a key of a slot the cache has not gained is not listed, nor is one of a
// slot gained and not ready, nor one of a slot lost.
func TestListedOnlyForReadySlotsTheCacheHolds(t *testing.T) {
	c := New(Config{Kube: kubefake.NewSimpleClientset(), Volcano: vcfake.NewSimpleClientset(),
		Slots: func() int { return testSlots }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.mu.Lock()
	c.ctx = ctx // not started: the test stands in for the lists
	c.mu.Unlock()
	key, _, _ := jobsIn(t)
	key = "ns/" + key
	slot := shard.SlotOf(key, testSlots)
	if c.Listed(key, testSlots) {
		t.Fatal("listed before the cache gained its slot")
	}
	c.SlotsGained([]int{slot})
	if c.Listed(key, testSlots) {
		t.Fatal("listed right after the gain, before any list")
	}
	for i := 0; i <= jobsBit; i++ {
		c.listed(i, []int{slot})
	}
	if !c.Listed(key, testSlots) {
		t.Fatal("not listed after every list of its slot")
	}
	c.SlotsLost([]int{slot})
	if c.Listed(key, testSlots) {
		t.Fatal("listed after its slot was lost")
	}
	if unsharded := New(Config{Kube: kubefake.NewSimpleClientset(), Volcano: vcfake.NewSimpleClientset()}); !unsharded.Listed(key, testSlots) {
		t.Fatal("a cache without a slot count holds every key, but said this one is not listed")
	}
}

// Once a sweep finds no unlabelled object of any Volcano Job in the whole
// cluster, the later gains go ready without one; an unlabelled object of a
// Volcano Job anywhere, even of a slot not gained, keeps the sweeps on.
func TestAdoptStopsSweepingOnceNothingIsLeft(t *testing.T) {
	held1, _, other := jobsIn(t)
	slot := slotOfJob(held1)
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	newCache := func(objs ...runtime.Object) (*Cache, *metadatafake.FakeMetadataClient, chan []int) {
		md := metadatafake.NewSimpleMetadataClient(scheme, objs...)
		ready := make(chan []int, 8)
		c := New(Config{Kube: kubefake.NewSimpleClientset(), Volcano: vcfake.NewSimpleClientset(), Metadata: md,
			Slots: func() int { return testSlots }, SlotsReady: func(slots []int) { ready <- slots }})
		return c, md, ready
	}

	// An unlabelled pod of another slot's Volcano Job: nothing to adopt here, but not clean.
	c, _, _ := newCache(objMeta("v1", "Pod", other+"-worker-0", other, map[string]string{batch.JobNameKey: other}))
	c.unlisted[slot], c.gen[slot] = 1<<adoptBit, 1
	c.adopt.sweep(context.Background(), map[int]uint64{slot: 1})
	if c.AdoptStats().Clean {
		t.Fatal("clean with an unlabelled pod of a Volcano Job in the cluster")
	}

	// Only labelled objects and objects of no Job: clean, and the next gain is not swept.
	c, md, ready := newCache(
		objMeta("v1", "Pod", held1+"-worker-0", held1, map[string]string{batch.JobNameKey: held1, shard.SlotLabel: fmt.Sprint(slot)}),
		objMeta("v1", "ConfigMap", "kube-root-ca.crt", "", nil),
		objMeta("v1", "Pod", "bare", "", nil))
	c.unlisted[slot], c.gen[slot] = 1<<adoptBit, 1
	c.adopt.sweep(context.Background(), map[int]uint64{slot: 1})
	if !c.AdoptStats().Clean {
		t.Fatal("not clean with nothing left to adopt")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()
	go c.adopt.run(ctx)
	md.ClearActions()
	c.SlotsGained([]int{slot}) // generation 2
	for i := 0; i <= jobsBit; i++ {
		c.listed(i, []int{slot})
	}
	select {
	case got := <-ready:
		if !slices.Equal(got, []int{slot}) {
			t.Fatalf("ready %v, want [%d]", got, slot)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the gain did not go ready without its sweep")
	}
	if n := len(md.Actions()); n != 0 {
		t.Errorf("the gain after a clean sweep made %d requests, want none", n)
	}
	if s := c.AdoptStats(); s.Skipped != 1 || s.Sweeps != 1 {
		t.Errorf("stats %+v, want 1 sweep and 1 skipped", s)
	}
}
