package membership

import (
	"context"
	"time"
)

// backoff doubles a wait from min up to max; reset starts over.
type backoff struct {
	min, max, cur time.Duration
}

func newBackoff(min, max time.Duration) *backoff { return &backoff{min: min, max: max, cur: min} }

func (b *backoff) peek() time.Duration { return b.cur }

func (b *backoff) reset() { b.cur = b.min }

// wait sleeps for the current wait or until ctx is done, then doubles it.
func (b *backoff) wait(ctx context.Context) {
	t := time.NewTimer(b.cur)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	b.cur = min(2*b.cur, b.max)
}
