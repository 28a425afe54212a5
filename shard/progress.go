package shard

import (
	"context"
	"net/http"
	"time"
)

// A run is judged on its progress, not its length: the time budget is how long it may go with
// no API request answered. Every request a handler makes with its context (the context the
// dispatcher gives it, or one derived from it) is seen by ProgressTransport on the replica's
// clients, and each answer counts as progress of the run that asked; Progressed counts
// progress any other way. A kill of 10,000 pods that the client's rate limiter paces makes
// steady progress and is no suspect; a handler that waits on nothing the API server answers is.
// MaxRun still bounds a run whatever its progress.

type runKey struct{}

// withRun returns ctx carrying r, for Progressed.
func withRun(ctx context.Context, r *quarantineRun) context.Context {
	return context.WithValue(ctx, runKey{}, r)
}

// Progressed records that the run whose context ctx is (or derives from) made progress now.
// It does nothing for a context of no run.
func Progressed(ctx context.Context) {
	if r, ok := ctx.Value(runKey{}).(*quarantineRun); ok {
		r.progress.Store(time.Now().UnixNano())
	}
}

// ProgressTransport wraps rt so that each request answered (any status but 429 and 5xx: the
// API server took it and said something) counts as progress of the run its context belongs to.
// A request of no run passes through as it would.
func ProgressTransport(rt http.RoundTripper) http.RoundTripper {
	return progressTransport{rt}
}

type progressTransport struct{ rt http.RoundTripper }

func (p progressTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := p.rt.RoundTrip(req)
	if err == nil && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
		Progressed(req.Context())
	}
	return resp, err
}
