package kit

import (
	"context"

	"github.com/ringfire/ringfire/shard"
)

// Fence is the check every controller makes right before each write: that
// the request's slot is still held (its context is not done) and that this
// replica's membership is still valid. A controller embeds it and sets it
// from its Config's Valid.
type Fence struct {
	// Valid, when set, reports whether this replica's membership is still
	// valid right now (shard.Manager.Valid).
	Valid func() error
}

// Guard returns shard.ErrNotOwner, wrapped, if this replica may no longer
// write for ctx's slot; nil otherwise. It is called right before every
// write.
func (f Fence) Guard(ctx context.Context) error { return shard.CheckOwner(ctx, f.Valid) }
