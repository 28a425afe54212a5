package membership

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Why a session ended, as context.Cause of Session.Context.
var (
	// ErrFenced: the lease could not be renewed in time; the member stopped
	// before the lease could expire at etcd.
	ErrFenced = errors.New("membership fenced: lease not renewed in time")
	// ErrLeaseLost: etcd answered that the lease no longer exists.
	ErrLeaseLost = errors.New("membership lost: lease expired or revoked at etcd")
	// ErrLeft: the member left the ring on purpose.
	ErrLeft = errors.New("membership ended: member left the ring")
)

// Session is one tenure of the member in the ring, under one lease. Work tied
// to the session must stop when Context is done. Context is cancelled by a
// timer at the fence deadline; a process that was paused past it (SIGSTOP, a
// long GC pause) may wake up before that timer has run, so writers call Valid
// right before a write as well.
type Session struct {
	ID    string
	Lease clientv3.LeaseID
	TTL   time.Duration

	ctx    context.Context
	cancel context.CancelCauseFunc
	clock  Clock
	// deadline is the fence deadline, a reading of clock moved by Add, so
	// it keeps the monotonic reading: compared with Before and Sub against
	// clock.Now, it ignores wall-clock steps. UnixNano would not.
	deadline atomic.Pointer[time.Time]
	onFence  func() // called once if the fence timer ends the session

	mu    sync.Mutex  // guards fence: its timer may fire before newSession has stored it
	fence *time.Timer // ends the session at the deadline
}

// newSession starts a session whose fence timer ends it at deadline, a
// reading of clock, unless extend moves the deadline first. The timer runs
// on its own, so a renewal request that hangs cannot hold the fence back.
func newSession(id string, lease clientv3.LeaseID, ttl time.Duration, clock Clock, deadline time.Time, onFence func()) *Session {
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &Session{ID: id, Lease: lease, TTL: ttl, ctx: ctx, cancel: cancel, clock: clock, onFence: onFence}
	s.deadline.Store(&deadline)
	s.mu.Lock()
	defer s.mu.Unlock()
	// A deadline already past (a join slowed down by a starved machine)
	// fires the timer at once, in another goroutine.
	s.fence = time.AfterFunc(s.left(), s.checkFence)
	return s
}

// left is the time until the fence deadline, negative once it has passed.
func (s *Session) left() time.Duration { return s.Deadline().Sub(s.clock.Now()) }

// checkFence ends the session if the deadline has passed, else waits for it again.
func (s *Session) checkFence() {
	if s.ctx.Err() != nil {
		return
	}
	if left := s.left(); left > 0 {
		s.mu.Lock()
		s.fence.Reset(left)
		s.mu.Unlock()
		return
	}
	s.end(ErrFenced)
	if s.onFence != nil {
		s.onFence()
	}
}

// Context is done when the session ends; context.Cause says why.
func (s *Session) Context() context.Context { return s.ctx }

// Done is Context().Done().
func (s *Session) Done() <-chan struct{} { return s.ctx.Done() }

// Deadline is the time by which the session ends unless the lease is
// renewed. It carries the monotonic reading of the member's clock: measure
// it with Sub or Until, not with its wall reading.
func (s *Session) Deadline() time.Time { return *s.deadline.Load() }

// Valid reports an error when the session has ended or its fence deadline has
// passed, whether or not the timer that ends it has run yet.
func (s *Session) Valid() error {
	if s.ctx.Err() != nil {
		return context.Cause(s.ctx)
	}
	if s.left() <= 0 {
		return ErrFenced
	}
	return nil
}

// extend moves the deadline later; the fence timer, when it fires, finds
// the new deadline and waits for it. Only the renewing goroutine calls it,
// so the load and the store need no lock between them.
func (s *Session) extend(deadline time.Time) {
	if deadline.After(s.Deadline()) {
		s.deadline.Store(&deadline)
	}
}

func (s *Session) end(cause error) {
	s.cancel(cause)
	s.mu.Lock()
	s.fence.Stop()
	s.mu.Unlock()
}
