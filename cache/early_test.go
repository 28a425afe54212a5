package cache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/shard"
)

// A gained slot is told early (SlotsEarly) once, at the moment every part of
// its gain is in but its pods; its pods' list starts then (not before), and
// PodsListing holds from then until the pods are listed; a slot whose pods
// were listed before some other part is never early, and a lost slot is
// neither.
func TestPodsListingOnlyWhenOnlyPodsAreLeft(t *testing.T) {
	var early, ready [][]int
	// No list answers: the test alone says what has listed.
	kube, vc := kubefake.NewClientset(), vcfake.NewSimpleClientset()
	refuse := func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("no lists here")
	}
	kube.PrependReactor("list", "*", refuse)
	vc.PrependReactor("list", "*", refuse)
	c := New(Config{Kube: kube, Volcano: vc,
		Slots:      func() int { return testSlots },
		SlotsEarly: func(slots []int) { early = append(early, slots) },
		SlotsReady: func(slots []int) { ready = append(ready, slots) },
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.mu.Lock()
	c.ctx = ctx // not started: the test stands in for the lists
	c.mu.Unlock()
	key := "ns/early"
	slot := shard.SlotOf(key, testSlots)

	// podsWatched reports whether the pods' reflectors watch the slot, and
	// fails unless one batch does, over the slot alone.
	podsWatched := func() bool {
		t.Helper()
		p := c.owned[Pods]
		p.mu.Lock()
		defer p.mu.Unlock()
		if len(p.batches) == 0 && !p.owned[slot] {
			return false
		}
		for b := range p.batches {
			if len(p.batches) != 1 || len(b.slots) != 1 || !b.slots[slot] || !p.owned[slot] {
				t.Fatalf("pods' batches %d, the slot owned %v: want one batch over slot %d alone", len(p.batches), p.owned[slot], slot)
			}
		}
		return true
	}
	c.SlotsGained([]int{slot})
	for i := 0; i <= jobsBit; i++ {
		if c.PodsListing(key, testSlots) {
			t.Fatalf("pods listing with part %s and more still to list", partName(i))
		}
		if podsWatched() {
			t.Fatalf("the pods' list started with part %s and more still to list: it is the gain's largest and goes last", partName(i))
		}
		if i != podsBit {
			c.listed(i, []int{slot})
		}
	}
	if !podsWatched() {
		t.Fatal("every part but the pods listed, and the pods' list did not start")
	}
	if !c.PodsListing(key, testSlots) || c.Listed(key, testSlots) {
		t.Fatalf("only the pods left: pods listing %v, listed %v; want true, false", c.PodsListing(key, testSlots), c.Listed(key, testSlots))
	}
	if !slices.EqualFunc(early, [][]int{{slot}}, slices.Equal) || len(ready) != 0 {
		t.Fatalf("told early %v and ready %v, want early [[%d]] only", early, ready, slot)
	}
	holding := func() bool {
		c.expect.mu.Lock()
		defer c.expect.mu.Unlock()
		return c.expect.listing[slot]
	}
	if !holding() {
		t.Fatal("the expectations of a slot still listing are not held")
	}
	c.listed(podsBit, []int{slot})
	if c.PodsListing(key, testSlots) || !c.Listed(key, testSlots) || len(early) != 1 || len(ready) != 1 {
		t.Fatalf("pods listed: pods listing %v, listed %v, early %v, ready %v", c.PodsListing(key, testSlots), c.Listed(key, testSlots), early, ready)
	}
	if holding() {
		t.Fatal("the expectations of a listed slot are still held")
	}

	// Lost, gained again, the pods listed first: never early.
	c.SlotsLost([]int{slot})
	if c.PodsListing(key, testSlots) {
		t.Fatal("pods listing on a lost slot")
	}
	c.SlotsGained([]int{slot})
	c.listed(podsBit, []int{slot})
	for i := 0; i <= jobsBit; i++ {
		if i != podsBit {
			c.listed(i, []int{slot})
		}
		if c.PodsListing(key, testSlots) {
			t.Fatalf("pods listing after part %s, with the pods listed", partName(i))
		}
	}
	if len(early) != 1 || len(ready) != 2 {
		t.Fatalf("told early %d and ready %d times, want 1 and 2", len(early), len(ready))
	}

	// Only the pods left, then lost: not pods listing.
	c.SlotsLost([]int{slot})
	c.SlotsGained([]int{slot})
	for i := 0; i <= jobsBit; i++ {
		if i != podsBit {
			c.listed(i, []int{slot})
		}
	}
	if !podsWatched() {
		t.Fatal("gained again, every part but the pods listed, and the pods' list did not start")
	}
	c.SlotsLost([]int{slot})
	if c.PodsListing(key, testSlots) {
		t.Fatal("pods listing on a slot lost while its pods were listed")
	}
	if podsWatched() {
		t.Fatal("the pods' list of a lost slot still runs")
	}
	if unsharded := New(Config{Kube: kubefake.NewClientset(), Volcano: vcfake.NewSimpleClientset()}); unsharded.PodsListing(key, testSlots) {
		t.Fatal("a cache without a slot count holds every key listed, but said its pods are being listed")
	}
}

// podsListing makes key's slot held, gained, and listed but for its pods, as
// a gain would.
func podsListing(c *Cache, key string) int {
	slot := shard.SlotOf(key, testSlots)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held[slot], c.unlisted[slot] = true, 1<<podsBit
	c.gen[slot]++
	c.jobs.hold([]int{slot})
	return slot
}

// A Job whose pods were read from the API server stays read early until the
// cache shows the same pods at the same versions; a lost slot forgets it.
func TestReadEarlyUntilTheCacheCaughtUp(t *testing.T) {
	job := &batch.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "early", UID: "uid-early"}}
	yes := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: "early-worker-0", ResourceVersion: "7",
		Labels:          map[string]string{batch.JobNameKey: "early"},
		Annotations:     map[string]string{batch.TaskSpecKey: "worker"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "early", UID: "uid-early", Controller: &yes}},
	}}
	stranger := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "stranger", Labels: map[string]string{batch.JobNameKey: "early"}}}
	c := New(Config{Kube: kubefake.NewClientset(pod, stranger), Volcano: vcfake.NewSimpleClientset(), Slots: func() int { return testSlots }})
	if err := c.jobs.indexer.Add(job); err != nil {
		t.Fatal(err)
	}
	key := "ns/early"
	podsListing(c, key)
	read, err := c.JobInfoFromServer(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if got := read.Pods["worker"]; len(got) != 1 || got[pod.Name] == nil || len(read.Foreign) != 0 {
		t.Fatalf("read pods %v, foreign %v; want %s alone (the other pod has the label but no Job controls it)", got, read.Foreign, pod.Name)
	}
	if !c.ReadEarly(key) || c.CaughtUp(key, read) || !c.ReadEarly(key) {
		t.Fatal("caught up with a cache that has none of the pods read")
	}
	older := pod.DeepCopy()
	older.ResourceVersion = "6"
	if err := c.owned[Pods].Indexer().Add(older); err != nil {
		t.Fatal(err)
	}
	if c.CaughtUp(key, read) {
		t.Fatal("caught up with a cache that has an older version of the pod read")
	}
	if err := c.owned[Pods].Indexer().Update(pod); err != nil {
		t.Fatal(err)
	}
	if !c.CaughtUp(key, read) || c.ReadEarly(key) {
		t.Fatal("not caught up, or still read early, with the cache showing the pod as read")
	}
	if _, err := c.JobInfoFromServer(context.Background(), key); err != nil || !c.ReadEarly(key) {
		t.Fatalf("read again: %v, read early %v", err, c.ReadEarly(key))
	}
	c.SlotsLost([]int{shard.SlotOf(key, testSlots)})
	if c.ReadEarly(key) {
		t.Fatal("still read early after its slot was lost")
	}
	if !c.CaughtUp(key, nil) {
		t.Fatal("a Job gone is not caught up")
	}
}

// A Job of more pods than EarlyPodsLimit is not read early: its read stops
// once past the limit, and the Job waits for its slot's list without another
// read until the slot is ready or lost; a Job whose tasks ask for more is not
// read at all.
func TestJobInfoFromServerBoundsThePodsRead(t *testing.T) {
	yes := true
	objs := make([]runtime.Object, 0, EarlyPodsLimit+1)
	for i := range EarlyPodsLimit + 1 {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: fmt.Sprintf("huge-worker-%d", i),
			Labels:          map[string]string{batch.JobNameKey: "huge"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "huge", UID: "uid-huge", Controller: &yes}},
		}})
	}
	kube, lists := podListsCounted(objs...)
	c := New(Config{Kube: kube, Volcano: vcfake.NewSimpleClientset(), Slots: func() int { return testSlots }})
	asking := func(name string, replicas int32) *batch.Job {
		return &batch.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
			Spec: batch.JobSpec{Tasks: []batch.TaskSpec{{Name: "worker", Replicas: replicas}, {Name: "ps", Replicas: replicas}}}}
	}
	for _, job := range []*batch.Job{asking("huge", 1), asking("asks", EarlyPodsLimit/2+1), asking("absurd", math.MaxInt32)} {
		if err := c.jobs.indexer.Add(job); err != nil {
			t.Fatal(err)
		}
	}
	slot := podsListing(c, "ns/huge")
	read := func() error {
		info, err := c.JobInfoFromServer(context.Background(), "ns/huge")
		if info != nil {
			t.Fatalf("read %v of a Job too large", info)
		}
		return err
	}
	for i := range 2 {
		if err := read(); !errors.Is(err, ErrTooManyPods) {
			t.Fatalf("read %d: %v; want ErrTooManyPods", i, err)
		}
	}
	if *lists != 1 {
		t.Errorf("a Job found too large was listed %d times; want once for the gain", *lists)
	}
	if c.ReadEarly("ns/huge") {
		t.Fatal("a Job whose read was refused is marked read early")
	}
	*lists = 0
	if _, err := c.JobInfoFromServer(context.Background(), "ns/asks"); !errors.Is(err, ErrTooManyPods) || *lists != 0 {
		t.Errorf("a Job whose tasks ask for %d pods: %v after %d lists; want ErrTooManyPods without a list", EarlyPodsLimit+2, err, *lists)
	}
	if _, err := c.JobInfoFromServer(context.Background(), "ns/absurd"); !errors.Is(err, ErrTooManyPods) || *lists != 0 {
		t.Errorf("a Job whose two tasks ask for %d pods each: %v after %d lists; want ErrTooManyPods without a list", math.MaxInt32, err, *lists)
	}

	// The Job in full again after its slot was lost, as the next gain fills it.
	inFull := func() {
		c.jobs.mu.Lock()
		defer c.jobs.mu.Unlock()
		if err := c.jobs.storeLocked(asking("huge", 1)); err != nil {
			t.Fatal(err)
		}
	}
	// Forgotten once the slot is ready, once it is lost, and by CaughtUp: the
	// next read lists again.
	forgets := map[string]func(){
		"ready":     func() { c.listed(podsBit, []int{slot}) },
		"lost":      func() { c.SlotsLost([]int{slot}) },
		"caught up": func() { c.CaughtUp("ns/huge", nil) },
	}
	for _, how := range []string{"ready", "lost", "caught up"} {
		forgets[how]()
		if len(c.tooLarge) != 0 {
			t.Errorf("%s: still remembered as too large: %v", how, c.tooLarge)
		}
		podsListing(c, "ns/huge")
		inFull()
		*lists = 0
		if err := read(); !errors.Is(err, ErrTooManyPods) || *lists != 1 {
			t.Fatalf("after %s: %v after %d lists; want ErrTooManyPods after one", how, err, *lists)
		}
	}
	c.SlotsLost([]int{slot})

	// A read that ends after its slot was lost and gained again leaves
	// nothing for the new gain.
	podsListing(c, "ns/huge")
	inFull()
	kube.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		c.SlotsLost([]int{slot})
		podsListing(c, "ns/huge")
		return false, nil, nil
	})
	if err := read(); !errors.Is(err, ErrTooManyPods) || len(c.tooLarge) != 0 {
		t.Errorf("a read of an earlier gain: %v, remembered %v; want ErrTooManyPods and nothing remembered", err, c.tooLarge)
	}
}

// No more than EarlyReadsLimit early reads run at once; the others wait for
// a turn, and every one of them ends.
func TestEarlyReadsTakeTurns(t *testing.T) {
	const jobs = EarlyReadsLimit + 4
	var mu sync.Mutex
	running, most := 0, 0
	release := make(chan struct{})
	var releaseOnce sync.Once
	let := func() { releaseOnce.Do(func() { close(release) }) }
	// A real client on a loopback server: the fake clientset runs one
	// reaction at a time.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		mu.Lock()
		running--
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`)
	}))
	defer srv.Close()
	defer let()
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	c := New(Config{Kube: kube, Volcano: vcfake.NewSimpleClientset(), Slots: func() int { return testSlots }})
	errs := make(chan error, jobs)
	for i := range jobs {
		name := fmt.Sprintf("job-%d", i)
		if err := c.jobs.indexer.Add(&batch.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}); err != nil {
			t.Fatal(err)
		}
		go func() {
			_, err := c.JobInfoFromServer(context.Background(), "ns/"+name)
			errs <- err
		}()
	}
	// Wait for the limit to be reached, then for a while in which the reads
	// past it, were they not held back, would reach the server too: each has
	// nothing to do before its list but a lock.
	now := func() int { mu.Lock(); defer mu.Unlock(); return most }
	deadline := time.Now().Add(30 * time.Second)
	for now() < EarlyReadsLimit && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for range 50 {
		if now() > EarlyReadsLimit {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	reached := now()
	let()
	for range jobs {
		if err := <-errs; err != nil {
			t.Errorf("read: %v", err)
		}
	}
	if reached != EarlyReadsLimit || now() != EarlyReadsLimit {
		t.Errorf("at most %d reads ran at once (%d while held); want %d", now(), reached, EarlyReadsLimit)
	}
}

// podListsCounted is a fake clientset holding objs that counts its pod lists.
func podListsCounted(objs ...runtime.Object) (*kubefake.Clientset, *int) {
	kube := kubefake.NewClientset(objs...)
	lists := new(int)
	kube.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		*lists++
		return false, nil, nil
	})
	return kube, lists
}
