// Package wallstep makes, for tests, the readings a process gets when its
// wall clock is stepped (by NTP, an operator, a VM restored from a
// snapshot): Go's time.Now returns both a wall reading and a monotonic one,
// and a step moves the first only. Code that measures intervals with Sub,
// Until, Before or After between such readings sees nothing; code that
// compares UnixNano or Unix values sees the step.
//
// The time package offers no way to move one reading without the other, so
// Step sets the monotonic reading of a Time back after Add has moved both,
// through time.Time's memory layout. Check says whether that layout is the
// one this package knows; New refuses to make a Clock otherwise.
package wallstep

import (
	"errors"
	"sync/atomic"
	"time"
	"unsafe"
)

// Env names the test-only hook of `ringfire run` (cmd/ringfire/wallstep.go,
// docs/e2e.md): set to a duration, the replica steps the wall reading of its
// membership clock by that much on SIGUSR1.
const Env = "RINGFIRE_TEST_ONLY_WALL_STEP"

// timeLayout mirrors time.Time (Go 1.9 and later): with a monotonic reading,
// ext holds it, in nanoseconds since the process started.
type timeLayout struct {
	wall uint64
	ext  int64
	loc  *time.Location
}

// Step returns t with its wall reading moved by d and its monotonic reading,
// if it has one, kept. A t without a monotonic reading (from time.Unix,
// Round(0), a decoded value) has only the wall one to move: Step is then
// t.Add(d).
func Step(t time.Time, d time.Duration) time.Time {
	u := t.Add(d)
	if d == 0 || !hasMonotonic(t) || !hasMonotonic(u) {
		return u
	}
	(*timeLayout)(unsafe.Pointer(&u)).ext = (*timeLayout)(unsafe.Pointer(&t)).ext
	return u
}

// hasMonotonic reports whether t carries a monotonic reading: Round(0)
// strips it and changes nothing else.
func hasMonotonic(t time.Time) bool { return t != t.Round(0) }

// Check reports an error if Step cannot step a reading of time.Now on this
// Go runtime: time.Time's layout is not the one this package mirrors.
func Check() error {
	if unsafe.Sizeof(time.Time{}) != unsafe.Sizeof(timeLayout{}) {
		return errors.New("wallstep: time.Time's layout is not the one this package knows")
	}
	now := time.Now()
	if !hasMonotonic(now) {
		return errors.New("wallstep: time.Now carries no monotonic reading on this platform")
	}
	stepped := Step(now, time.Minute)
	if stepped.Sub(now) != 0 || stepped.Round(0).Sub(now.Round(0)) != time.Minute {
		return errors.New("wallstep: a stepped reading does not keep its monotonic reading; time.Time's layout has changed")
	}
	return nil
}

// Clock reads time.Now with the wall reading moved by an offset that can be
// changed at any moment (Set): the readings of a process whose wall clock
// was stepped by that much. Its Now suits membership.Config.Clock.
type Clock struct {
	offset atomic.Int64 // nanoseconds
}

// New returns a Clock with no offset, or Check's error.
func New() (*Clock, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	return &Clock{}, nil
}

// Now is time.Now with the wall reading moved by the current offset.
func (c *Clock) Now() time.Time { return Step(time.Now(), time.Duration(c.offset.Load())) }

// Set makes the offset d from now on: a step of the wall clock by d minus
// the offset before.
func (c *Clock) Set(d time.Duration) { c.offset.Store(int64(d)) }
