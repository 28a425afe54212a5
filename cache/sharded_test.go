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

// stuckFirstList is a list-watch whose first list hangs, deaf to its
// context, until release is closed (a reflector backing off from an API
// server that went away), and then answers with what it would have listed
// then. Later lists answer at once. Watches stay open and quiet.
type stuckFirstList struct {
	release chan struct{}
	mu      sync.Mutex
	lists   int
}

func (l *stuckFirstList) funcs() cache.ListWatchFunc {
	return cache.ListWatchFunc{
		List: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			l.mu.Lock()
			l.lists++
			first := l.lists == 1
			l.mu.Unlock()
			if first {
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

// podsOfSelector returns two pods for each slot of a "slot in (…)" selector.
func podsOfSelector(selector string) *corev1.PodList {
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
	inner := selector[strings.Index(selector, "(")+1 : strings.LastIndex(selector, ")")]
	for _, f := range strings.Split(inner, ",") {
		slot, _ := strconv.Atoi(strings.TrimSpace(f))
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
	lw := &stuckFirstList{release: make(chan struct{})}
	defer close(lw.release)
	s := cache.NewSharded("pods", func() runtime.Object { return &corev1.Pod{} }, lw.funcs(), hclog.NewNullLogger())
	listed := make(chan []int, 4)
	s.OnListed(func(slots []int) { listed <- slots })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	s.Gain(ctx, []int{1, 2, 3})
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

	lw.release <- struct{}{} // the old reflector's list lands now, late
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
