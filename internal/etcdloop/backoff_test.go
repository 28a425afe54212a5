package etcdloop

import (
	"context"
	"testing"
	"time"
)

// The wait starts at Min, doubles after each Wait up to Max, and starts over
// at Min after Reset.
func TestBackoffDoublesUpToMaxAndResets(t *testing.T) {
	b := Backoff{Min: time.Millisecond, Max: 5 * time.Millisecond}
	var got []time.Duration
	for range 5 {
		got = append(got, b.Next())
		if !b.Wait(context.Background()) {
			t.Fatal("Wait reported its context done")
		}
	}
	want := []time.Duration{1, 2, 4, 5, 5}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("waits %v, want %v ms", got, want)
		}
	}
	b.Reset()
	if b.Next() != time.Millisecond {
		t.Errorf("after Reset the next wait is %v, want Min", b.Next())
	}
}

// Wait returns as soon as its context is done, and says so.
func TestBackoffWaitEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := Backoff{Min: time.Hour, Max: time.Hour}
	start := time.Now()
	if b.Wait(ctx) {
		t.Error("Wait reported a full wait on a done context")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Wait took %v on a done context", took)
	}
}

// Or fills only what is unset, and the copy starts at Min.
func TestBackoffOr(t *testing.T) {
	def := Backoff{Min: time.Second, Max: 8 * time.Second}
	for _, c := range []struct {
		in, want Backoff
	}{
		{Backoff{}, def},
		{Backoff{Min: 2 * time.Second}, Backoff{Min: 2 * time.Second, Max: 8 * time.Second}},
		{Backoff{Min: 20 * time.Second}, Backoff{Min: 20 * time.Second, Max: 20 * time.Second}},
		{Backoff{Max: 3 * time.Second}, Backoff{Min: time.Second, Max: 3 * time.Second}},
		{Backoff{Min: 3 * time.Second, Max: 4 * time.Second}, Backoff{Min: 3 * time.Second, Max: 4 * time.Second}},
	} {
		in := c.in
		in.cur = 7 * time.Second // a wait moved on, which Or drops
		if got := in.Or(def); got.Min != c.want.Min || got.Max != c.want.Max || got.Next() != c.want.Min {
			t.Errorf("%+v.Or(%+v) = %+v (next %v), want %+v", c.in, def, got, got.Next(), c.want)
		}
	}
}
