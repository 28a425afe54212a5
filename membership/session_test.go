package membership

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/wallstep"
)

// A session whose deadline has passed by the time it is made (a join slowed
// down on a starved machine) fences at once, without racing its own setup.
func TestSessionWithADeadlinePassedFencesAtOnce(t *testing.T) {
	for i := range 50 {
		fenced := make(chan struct{})
		s := newSession("m", 1, time.Second, systemClock{}, time.Now().Add(-time.Millisecond), func() { close(fenced) })
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
	s := newSession("m", 1, time.Second, systemClock{}, start.Add(50*time.Millisecond), func() { close(fenced) })
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

// wallSteps are the steps of the wall clock the fence must not notice.
var wallSteps = []time.Duration{-time.Minute, time.Minute}

func steppingClock(t *testing.T) *wallstep.Clock {
	t.Helper()
	c, err := wallstep.New()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A step of the wall clock just after the deadline was set, back or
// forward by a minute, changes neither when the fence fires nor what Valid
// answers meanwhile: the deadline is kept and compared on the monotonic
// clock. (Compared by wall readings, a step back would hold the fence off
// for a minute, and a step forward would fence at once.)
func TestSessionFenceIgnoresWallClockSteps(t *testing.T) {
	const fenceAfter = time.Second
	for _, step := range wallSteps {
		t.Run(fmt.Sprintf("step %v", step), func(t *testing.T) {
			clock := steppingClock(t)
			start := clock.Now()
			fencedAfter := make(chan time.Duration, 1)
			s := newSession("m", 1, time.Second, clock, start.Add(fenceAfter), func() {
				fencedAfter <- time.Since(start) // both readings carry the monotonic clock
			})
			t.Cleanup(func() { s.end(ErrLeft) })
			clock.Set(step)

			err := s.Valid()
			// Measured after Valid: an error with less elapsed than that came before the deadline.
			if elapsed := time.Since(start); err != nil && elapsed < fenceAfter {
				t.Errorf("Valid = %v %v after the start, before the deadline at %v", err, elapsed, fenceAfter)
			}
			select {
			case took := <-fencedAfter:
				if took < fenceAfter {
					t.Errorf("fenced %v after the start, before the deadline at %v", took, fenceAfter)
				}
				t.Logf("fenced %v after the start (deadline %v)", took.Round(time.Millisecond), fenceAfter)
			case <-time.After(fenceAfter + 10*time.Second):
				t.Fatalf("no fence within 10s of the deadline")
			}
			if err := s.Valid(); !errors.Is(err, ErrFenced) {
				t.Errorf("Valid after the fence = %v, want ErrFenced", err)
			}
		})
	}
}

// Valid compares the clock with the deadline by itself, for a process that
// wakes from a pause before its fence timer has run: that comparison, too,
// is deaf to wall-clock steps. The timer is stopped here so that only Valid
// can tell.
func TestSessionValidIgnoresWallClockSteps(t *testing.T) {
	const fenceAfter = 300 * time.Millisecond
	for _, step := range wallSteps {
		t.Run(fmt.Sprintf("step %v", step), func(t *testing.T) {
			clock := steppingClock(t)
			start := clock.Now()
			s := newSession("m", 1, time.Second, clock, start.Add(fenceAfter), nil)
			s.mu.Lock()
			s.fence.Stop()
			s.mu.Unlock()
			t.Cleanup(func() { s.end(ErrLeft) })
			clock.Set(step)

			err := s.Valid()
			if elapsed := time.Since(start); err != nil && elapsed < fenceAfter {
				t.Errorf("Valid = %v %v after the start, before the deadline at %v", err, elapsed, fenceAfter)
			}
			time.Sleep(fenceAfter - time.Since(start) + 10*time.Millisecond)
			if s.ctx.Err() != nil {
				t.Fatal("the session ended with its timer stopped")
			}
			if err := s.Valid(); !errors.Is(err, ErrFenced) {
				t.Errorf("Valid %v after the start, past the deadline at %v: %v, want ErrFenced",
					time.Since(start).Round(time.Millisecond), fenceAfter, err)
			}
		})
	}
}

// Valid runs before every write, at the transport too: it must stay cheap.
func BenchmarkSessionValid(b *testing.B) {
	s := newSession("m", 1, time.Second, systemClock{}, time.Now().Add(time.Hour), nil)
	defer s.end(ErrLeft)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.Valid(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
