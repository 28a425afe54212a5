package shard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
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

// While another namespace is served, one namespace's long reconciles take all the workers but
// one, and the other namespace's next key runs at once on it; a namespace alone on the replica
// has every worker.
func TestDispatcherKeepsAWorkerForOtherNamespaces(t *testing.T) {
	release := make(chan struct{})
	var running sync.Map // key → struct{}
	ran := make(chan string, 16)
	handler := func(ctx context.Context, key string, _ int) error {
		running.Store(key, struct{}{})
		ran <- key
		if strings.HasPrefix(key, "busy/") {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		running.Delete(key)
		return nil
	}
	cfg := dispatcherTestConfig(HoldAll{}, handler)
	cfg.Workers = 4
	d := startDispatcher(t, cfg)
	defer close(release)
	count := func(prefix string) int {
		n := 0
		running.Range(func(k, _ any) bool {
			if strings.HasPrefix(k.(string), prefix) {
				n++
			}
			return true
		})
		return n
	}

	// Alone, the busy namespace takes every worker.
	for i := range 4 {
		d.Enqueue(fmt.Sprintf("busy/alone-%d", i), 1)
	}
	awaitCondition(t, "the busy namespace alone to run on all 4 workers", func() bool { return count("busy/") == 4 })
	release <- struct{}{}
	release <- struct{}{}
	release <- struct{}{}
	release <- struct{}{}
	awaitCondition(t, "the alone keys to end", func() bool { return count("busy/") == 0 })

	// The quiet namespace is served now; the busy one gets 3 of the 4.
	d.Enqueue("quiet/first", 1)
	awaitCondition(t, "the quiet key to run", func() bool { return count("quiet/") == 0 && len(ran) > 0 })
	for i := range 6 {
		d.Enqueue(fmt.Sprintf("busy/long-%d", i), 1)
	}
	awaitCondition(t, "three busy keys to run", func() bool { return count("busy/") == 3 })
	time.Sleep(100 * time.Millisecond)
	if n := count("busy/"); n != 3 {
		t.Fatalf("%d busy keys run while another namespace is served, want 3 of the 4 workers", n)
	}
	d.Enqueue("quiet/next", 1)
	deadline := time.After(5 * time.Second)
	for {
		select {
		case k := <-ran:
			if k == "quiet/next" {
				return
			}
		case <-deadline:
			t.Fatal("the quiet namespace's key did not run while the busy one held 3 workers")
		}
	}
}
