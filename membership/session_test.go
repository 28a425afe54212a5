package membership

import (
	"errors"
	"testing"
	"time"
)

// A session whose deadline has passed by the time it is made (a join slowed
// down on a starved machine) fences at once, without racing its own setup.
func TestSessionWithADeadlinePassedFencesAtOnce(t *testing.T) {
	for i := range 50 {
		fenced := make(chan struct{})
		s := newSession("m", 1, time.Second, time.Now().Add(-time.Millisecond), func() { close(fenced) })
		select {
		case <-fenced:
		case <-time.After(5 * time.Second):
			t.Fatalf("run %d: the session did not fence within 5s of a deadline already passed", i)
		}
		if err := s.Valid(); !errors.Is(err, ErrFenced) {
			t.Fatalf("run %d: Valid = %v, want ErrFenced", i, err)
		}
	}
}

// The fence timer follows the deadline as renewals extend it.
func TestSessionExtendMovesTheFence(t *testing.T) {
	fenced := make(chan struct{})
	start := time.Now()
	s := newSession("m", 1, time.Second, start.Add(50*time.Millisecond), func() { close(fenced) })
	s.extend(start.Add(300 * time.Millisecond))
	select {
	case <-fenced:
	case <-time.After(5 * time.Second):
		t.Fatal("the session did not fence within 5s")
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("fenced after %v, before the extended deadline of 300ms", took)
	}
	s.end(ErrLeft) // a no-op after the fence
}
