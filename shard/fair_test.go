package shard

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// One namespace's thousand ready keys do not go before another namespace's one: with one
// worker, the keys of three namespaces enqueued a thousand, ten and one at a time are run in
// turns, one of each namespace with keys left, each namespace's in the order they came.
func TestDispatcherServesNamespacesInTurn(t *testing.T) {
	gate := make(chan struct{})
	var mu sync.Mutex
	var order []string
	cfg := dispatcherTestConfig(HoldAll{}, func(_ context.Context, key string, _ int) error {
		if key == "first/gate" {
			<-gate // holds the one worker while the rest are enqueued
		}
		mu.Lock()
		order = append(order, key)
		mu.Unlock()
		return nil
	})
	cfg.Workers = 1
	d := startDispatcher(t, cfg)
	d.Enqueue("first/gate", 1)
	awaitCondition(t, "the gate key to run", func() bool { return d.inFlight() == 1 })
	for i := range 1000 {
		d.Enqueue(fmt.Sprintf("big/j%04d", i), 1)
	}
	for i := range 10 {
		d.Enqueue(fmt.Sprintf("small/j%d", i), 1)
	}
	d.Enqueue("cluster-scoped", 1)
	close(gate)
	awaitCondition(t, "every key to run", func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == 1012 })

	want := []string{"first/gate", "big/j0000", "small/j0", "cluster-scoped"}
	for i := 1; i < 10; i++ {
		want = append(want, fmt.Sprintf("big/j%04d", i), fmt.Sprintf("small/j%d", i))
	}
	for i := 10; i < 1000; i++ {
		want = append(want, fmt.Sprintf("big/j%04d", i))
	}
	if !slices.Equal(order, want) {
		n := 0
		for n < len(order) && n < len(want) && order[n] == want[n] {
			n++
		}
		t.Errorf("run order differs from %d on: got %v, want %v", n, order[n:min(n+6, len(order))], want[n:min(n+6, len(want))])
	}
	d.mu.Lock()
	n := len(d.ready.flows)
	d.mu.Unlock()
	if n != 0 {
		t.Errorf("%d flows kept after every key ran, want none", n)
	}
}
