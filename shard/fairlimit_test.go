package shard

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// runContext is the context of a run of key, as the dispatcher gives a handler.
func runContext(key string) context.Context {
	return withRun(context.Background(), &quarantineRun{id: "job/" + key})
}

// queued counts the limiter's waiters that still wait.
func (l *FairLimiter) queued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for f := l.waiting.head; f != nil; f = f.next {
		for w := f.head; w != nil; w = w.next {
			if !w.gone {
				n++
			}
		}
	}
	return n
}

// One namespace's fifty queued requests do not go before another namespace's one: the second
// namespace's request is served within the first turn of the flows, and every request is
// served once.
func TestFairLimiterServesNamespacesInTurn(t *testing.T) {
	l := NewFairLimiter(40, 1)
	l.Accept() // the burst is spent: every request below waits
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	wait := func(key string) {
		defer wg.Done()
		if err := l.Wait(runContext(key)); err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		order = append(order, key)
		mu.Unlock()
	}
	for range 50 {
		wg.Add(1)
		go wait("busy/big")
	}
	awaitCondition(t, "the busy namespace's requests to queue", func() bool { return l.queued() >= 40 })
	mu.Lock()
	before := len(order)
	mu.Unlock()
	wg.Add(1)
	go wait("quiet/small")
	wg.Wait()
	if len(order) != 51 {
		t.Fatalf("%d requests served, want 51", len(order))
	}
	i := slices.Index(order, "quiet/small")
	if i-before > 2 {
		t.Errorf("the other namespace's request was served behind %d of the busy one's queued before it", i-before)
	}
}

// A request whose context ends while it waits returns the context's error and takes no token
// from those behind it; an idle limiter passes requests within its burst at once.
func TestFairLimiterWaitEndsWithItsContext(t *testing.T) {
	l := NewFairLimiter(2, 3)
	start := time.Now()
	for range 3 {
		if err := l.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 400*time.Millisecond {
		t.Errorf("the burst of 3 took %v, want no wait", d)
	}
	ctx, cancel := context.WithCancel(runContext("a/x"))
	errc := make(chan error, 1)
	go func() { errc <- l.Wait(ctx) }()
	awaitCondition(t, "the request to wait", func() bool { return l.queued() == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
	if err := l.Wait(runContext("b/y")); err != nil { // the next token is this one's: the gone request took none
		t.Fatal(err)
	}
}

// Stop lets every waiter go.
func TestFairLimiterStop(t *testing.T) {
	l := NewFairLimiter(0.001, 1)
	l.Accept()
	done := make(chan error, 1)
	go func() { done <- l.Wait(runContext("a/x")) }()
	awaitCondition(t, "the request to wait", func() bool { return l.queued() == 1 })
	l.Stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiter still waits 5 s after Stop")
	}
}
