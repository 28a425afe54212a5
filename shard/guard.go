package shard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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

// FenceWrites wraps an API client's transport so that no write leaves the
// process while valid (Manager.Valid) fails: a request other than GET, HEAD
// or OPTIONS is refused with ErrNotOwner, unsent. Reads pass.
//
// CheckOwner runs before a write is built, and a write can still wait long
// after it: client-go holds each request in its rate limiter before the
// transport sends it. A process paused (SIGSTOP, a frozen VM) in that wait
// wakes up with the request about to go out, before its fence timer has run
// and cancelled the slot contexts. The transport is the last point before
// the wire, after the rate limiter, so the check there narrows that window to
// the instant between the check and the send; the preconditions every write
// carries (resourceVersion, UID, deterministic names) cover that instant.
func FenceWrites(valid func() error) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return &fencedTransport{next: next, valid: valid}
	}
}

type fencedTransport struct {
	next  http.RoundTripper
	valid func() error
}

func (t *fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if err := t.valid(); err != nil {
			if req.Body != nil {
				req.Body.Close() // a RoundTripper must close the body, even on error
			}
			return nil, fmt.Errorf("%w: %s %s not sent: %v", ErrNotOwner, req.Method, req.URL.Path, err)
		}
	}
	return t.next.RoundTrip(req)
}
