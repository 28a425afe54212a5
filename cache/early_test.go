package cache

import (
	"context"
	"errors"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/shard"
)

// A gained slot is told early (SlotsEarly) once, at the moment every part of
// its gain is in but its pods, and PodsListing holds from then until the pods
// are listed; a slot whose pods were listed before some other part is never
// early, and a lost slot is neither.
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

	c.SlotsGained([]int{slot})
	for i := 0; i <= jobsBit; i++ {
		if c.PodsListing(key, testSlots) {
			t.Fatalf("pods listing with part %s and more still to list", partName(i))
		}
		if i != podsBit {
			c.listed(i, []int{slot})
		}
	}
	if !c.PodsListing(key, testSlots) || c.Listed(key, testSlots) {
		t.Fatalf("only the pods left: pods listing %v, listed %v; want true, false", c.PodsListing(key, testSlots), c.Listed(key, testSlots))
	}
	if !slices.EqualFunc(early, [][]int{{slot}}, slices.Equal) || len(ready) != 0 {
		t.Fatalf("told early %v and ready %v, want early [[%d]] only", early, ready, slot)
	}
	c.listed(podsBit, []int{slot})
	if c.PodsListing(key, testSlots) || !c.Listed(key, testSlots) || len(early) != 1 || len(ready) != 1 {
		t.Fatalf("pods listed: pods listing %v, listed %v, early %v, ready %v", c.PodsListing(key, testSlots), c.Listed(key, testSlots), early, ready)
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
	c.SlotsLost([]int{slot})
	if c.PodsListing(key, testSlots) {
		t.Fatal("pods listing on a slot lost while its pods were listed")
	}
	if unsharded := New(Config{Kube: kubefake.NewClientset(), Volcano: vcfake.NewSimpleClientset()}); unsharded.PodsListing(key, testSlots) {
		t.Fatal("a cache without a slot count holds every key listed, but said its pods are being listed")
	}
}
