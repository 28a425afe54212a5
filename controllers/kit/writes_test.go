package kit

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestParallelRunsEachOnceWithinTheLimit(t *testing.T) {
	var running, most atomic.Int32
	var mu sync.Mutex
	seen := map[int]int{}
	errs := Parallel(20, 3, func(i int) error {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		mu.Lock()
		seen[i]++
		mu.Unlock()
		if i == 7 {
			return errors.New("seven")
		}
		return nil
	})
	if most.Load() > 3 {
		t.Errorf("%d calls ran at once, want at most 3", most.Load())
	}
	for i := range 20 {
		if seen[i] != 1 {
			t.Errorf("call %d made %d times", i, seen[i])
		}
		if (errs[i] != nil) != (i == 7) {
			t.Errorf("error %d: %v", i, errs[i])
		}
	}
}

// Batches of 1, 2, 4, …: a failure in one ends the writes after that batch.
func TestSlowStartStopsAfterTheFirstFailingBatch(t *testing.T) {
	cases := []struct {
		n, failAt, wantTried int
	}{
		{n: 10, failAt: -1, wantTried: 10},
		{n: 10, failAt: 0, wantTried: 1},    // batch [0]
		{n: 10, failAt: 2, wantTried: 3},    // batches [0] [1 2]
		{n: 10, failAt: 5, wantTried: 7},    // [0] [1 2] [3 4 5 6]
		{n: 100, failAt: 20, wantTried: 31}, // … [15..30]
		{n: 0, failAt: -1, wantTried: 0},
	}
	for _, tc := range cases {
		var calls atomic.Int32
		errs, tried := SlowStart(tc.n, 4, func(i int) error {
			calls.Add(1)
			if i == tc.failAt {
				return errors.New("refused")
			}
			return nil
		})
		if tried != tc.wantTried || int(calls.Load()) != tc.wantTried {
			t.Errorf("n=%d fail at %d: tried %d, %d calls; want %d", tc.n, tc.failAt, tried, calls.Load(), tc.wantTried)
		}
		if tc.failAt >= 0 && errs[tc.failAt] == nil {
			t.Errorf("n=%d: the failure at %d is not reported", tc.n, tc.failAt)
		}
	}
}

// An absurd bound changes nothing: the writes in flight are bounded by the writes there are.
func TestParallelWithAnAbsurdLimit(t *testing.T) {
	var calls atomic.Int32
	errs := Parallel(3, 1<<40, func(int) error { calls.Add(1); return nil })
	if calls.Load() != 3 || len(errs) != 3 {
		t.Fatalf("%d calls, %d errors; want 3 and 3", calls.Load(), len(errs))
	}
	if errs, tried := SlowStart(5, -7, func(int) error { return nil }); tried != 5 || len(errs) != 5 {
		t.Fatalf("a negative bound tried %d of 5", tried)
	}
}
