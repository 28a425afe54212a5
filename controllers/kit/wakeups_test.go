package kit

import (
	"context"
	"testing"
	"time"
)

// One look per key: the earliest asked for. A later ask while one is due sets no timer; an
// earlier one does; once the look's time has passed (its reconcile ran, or its timer was
// lost with the slot), the next ask sets a timer again.
func TestWakeupsKeepTheEarliestLookPerKey(t *testing.T) {
	var w Wakeups
	ctx := context.Background()
	t0 := time.Unix(1000, 0)
	steps := []struct {
		what    string
		now, at time.Duration
		want    bool
	}{
		{"first ask", 0, 10 * time.Second, true},
		{"a later look while one is due", time.Second, 20 * time.Second, false},
		{"the same time", 2 * time.Second, 10 * time.Second, false},
		{"an earlier look", 3 * time.Second, 5 * time.Second, true},
		{"after the look's time passed unrun", 6 * time.Second, 8 * time.Second, true},
	}
	for _, s := range steps {
		if got := w.Due("k", ctx, t0.Add(s.now), t0.Add(s.at)); got != s.want {
			t.Errorf("%s: Due = %v, want %v", s.what, got, s.want)
		}
	}
	if at, ok := w.At("k"); !ok || !at.Equal(t0.Add(8*time.Second)) {
		t.Errorf("At = %v, %v; want the last look set, at 8s", at, ok)
	}
	w.Passed("k", t0.Add(7*time.Second)) // not yet due: kept
	if _, ok := w.At("k"); !ok {
		t.Error("Passed before the look's time dropped it")
	}
	w.Passed("k", t0.Add(8*time.Second))
	if _, ok := w.At("k"); ok {
		t.Error("Passed at the look's time kept it")
	}
	w.Due("a", ctx, t0, t0.Add(time.Hour))
	w.Due("b", ctx, t0, t0.Add(time.Hour))
	w.ForgetWhere(func(key string) bool { return key == "a" })
	if _, ok := w.At("a"); ok {
		t.Error("ForgetWhere kept a")
	}
	w.Forget("b")
	if !w.Due("b", ctx, t0, t0.Add(time.Hour)) {
		t.Error("a forgotten key's ask set no timer")
	}
}

// A look asked in a term that ended (its slot was lost, its timer dropped) counts as none:
// the next ask, in the new term, sets a timer.
func TestWakeupsOfAnEndedTermAreNone(t *testing.T) {
	var w Wakeups
	t0 := time.Unix(1000, 0)
	term, end := context.WithCancel(context.Background())
	if !w.Due("k", term, t0, t0.Add(time.Hour)) {
		t.Fatal("first ask set no timer")
	}
	end()
	if !w.Due("k", context.Background(), t0.Add(time.Second), t0.Add(time.Hour)) {
		t.Error("an ask after the term ended set no timer; the look would be lost")
	}
}
