package shard

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotOwner marks a write refused because this replica may no longer own
// the slot of the key it was working on.
var ErrNotOwner = errors.New("no longer the owner of this key's slot")

// CheckOwner is what a controller calls right before every write: it fails
// with ErrNotOwner when ctx (the slot's context) has ended or valid (the
// membership's check of its fence deadline, Manager.Valid; may be nil)
// fails. The second check catches a process that was paused past its lease
// and has just woken up, before its fence timer has run.
func CheckOwner(ctx context.Context, valid func() error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %v", ErrNotOwner, context.Cause(ctx))
	}
	if valid != nil {
		if err := valid(); err != nil {
			return fmt.Errorf("%w: %v", ErrNotOwner, err)
		}
	}
	return nil
}
