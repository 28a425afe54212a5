package cache_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/shard"
)

// stuckList is a list-watch whose lists of a selector naming slot stuck
// hang, deaf to their context, until release gives them way (a reflector
// backing off from an API server that went away), and then answer with what
// they would have listed then. Other lists answer at once. Watches stay open
// and quiet.
type stuckList struct {
	stuck   int
	entered chan struct{} // closed when the first stuck list begins
	once    sync.Once
	release chan struct{}
}

func (l *stuckList) funcs() cache.ListWatchFunc {
	return cache.ListWatchFunc{
		List: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			if slices.Contains(slotsOfSelector(opts.LabelSelector), l.stuck) {
				l.once.Do(func() { close(l.entered) })
				<-l.release
			}
			return podsOfSelector(opts.LabelSelector), nil
		},
		Watch: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if opts.SendInitialEvents != nil {
				return nil, errWatchListUnsupported
			}
			return watch.NewFake(), nil
		},
	}
}

var errWatchListUnsupported = &watchListError{}

type watchListError struct{}

func (*watchListError) Error() string { return "watch-list not supported here" }

// slotsOfSelector returns the slots of a "slot in (…)" selector.
func slotsOfSelector(selector string) []int {
	inner := selector[strings.Index(selector, "(")+1 : strings.LastIndex(selector, ")")]
	var slots []int
	for _, f := range strings.Split(inner, ",") {
		slot, _ := strconv.Atoi(strings.TrimSpace(f))
		slots = append(slots, slot)
	}
	return slots
}

// podsOfSelector returns two pods for each slot of a "slot in (…)" selector.
func podsOfSelector(selector string) *corev1.PodList {
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
	for _, slot := range slotsOfSelector(selector) {
		for i := range 2 {
			list.Items = append(list.Items, *pod(slot, i))
		}
	}
	return list
}

// A batch that loses some of its slots before its first list has landed
// starts over on the rest, and those are reported listed; Lose does not
// wait for the old reflector, which may hang in a back-off for long, and
// what that reflector lists late never enters the index.
func TestShardedKeptSlotsOfAnUnlistedBatchGetListed(t *testing.T) {
	lw := &stuckList{stuck: 2, entered: make(chan struct{}), release: make(chan struct{})}
	s := cache.NewSharded("pods", func() runtime.Object { return &corev1.Pod{} }, lw.funcs(), hclog.NewNullLogger())
	listed := make(chan []int, 4)
	s.OnListed(func(slots []int) { listed <- slots })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	s.Gain(ctx, []int{1, 2, 3})
	select {
	case <-lw.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the reflector of slots [1 2 3] did not list within 10s")
	}
	lost := make(chan struct{})
	go func() { defer close(lost); s.Lose([]int{2}) }()
	select {
	case <-lost:
	case <-time.After(5 * time.Second):
		t.Fatal("Lose waited for a reflector stuck in its list")
	}
	select {
	case got := <-listed:
		if !slices.Equal(got, []int{1, 3}) {
			t.Fatalf("listed %v, want the kept slots [1 3]", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the kept slots [1 3] were never reported listed")
	}
	if got := slotsOfIndex(s); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("pods of slots %v in the index, want [1 3]", got)
	}

	close(lw.release) // the old reflector's list lands now, late
	time.Sleep(200 * time.Millisecond)
	if got := slotsOfIndex(s); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("after the stale list: pods of slots %v in the index, want [1 3]", got)
	}
	select {
	case got := <-listed:
		t.Fatalf("a stopped batch reported %v listed", got)
	default:
	}
}

func slotsOfIndex(s *cache.Sharded) []int {
	var slots []int
	for _, obj := range s.Indexer().List() {
		n, _ := strconv.Atoi(obj.(*corev1.Pod).Labels[shard.SlotLabel])
		if !slices.Contains(slots, n) {
			slots = append(slots, n)
		}
	}
	slices.Sort(slots)
	return slots
}
