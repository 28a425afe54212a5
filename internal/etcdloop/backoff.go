// Package etcdloop holds the two loops that ringfire runs against etcd in
// more than one place: the backoff between failed requests (Backoff), and
// following the keys under a prefix by a full read and then a watch, read
// again in full whenever the watch breaks (Follow). The membership package
// follows the member set with it and the shard package the slot keys.
package etcdloop

import (
	"context"
	"time"
)

// Backoff is a wait that starts at Min and doubles after each Wait, up to
// Max; Reset starts over at Min. Set Min and Max, then use a copy per loop:
// the copy carries the current wait.
type Backoff struct {
	Min, Max time.Duration
	cur      time.Duration
}

// Or returns b with each bound it leaves unset taken from def: Min when it
// is not positive, Max when it is below Min. The copy starts at Min.
func (b Backoff) Or(def Backoff) Backoff {
	if b.Min <= 0 {
		b.Min = def.Min
	}
	if b.Max < b.Min {
		b.Max = max(def.Max, b.Min)
	}
	b.cur = 0
	return b
}

// Next is the wait the next Wait sleeps.
func (b *Backoff) Next() time.Duration {
	if b.cur <= 0 {
		return b.Min
	}
	return b.cur
}

// Reset makes the next wait Min again, after a success.
func (b *Backoff) Reset() { b.cur = b.Min }

// Wait sleeps for the next wait or until ctx is done, whichever is first,
// then doubles the wait (up to Max). It reports whether it slept the whole
// wait, that is false when ctx ended it.
func (b *Backoff) Wait(ctx context.Context) bool {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	b.cur = min(2*b.Next(), b.Max)
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
