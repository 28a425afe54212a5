package stack

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ringfire/ringfire/shard"
)

// GainHold holds back, for one replica, the API server's answers to its lists of gained
// slots' pods (the slot-labelled cluster-wide pod lists a gain makes last), so that a test
// can see what the replica does before its slots' pods are in. Each list is answered by the
// API server first and only its answer is held: the snapshot the replica's cache starts from
// is older than anything made while it waits, as on a busy cluster. Pass Wrap as
// Options.WrapKube, call Hold when the holding should start and Release to let the answers
// through (Release is idempotent; call it deferred too).
type GainHold struct {
	replica string
	on      atomic.Bool
	held    atomic.Int32
	seen    atomic.Bool
	release chan struct{}
	once    sync.Once
}

// NewGainHold returns a GainHold for the replica of that id, not holding yet.
func NewGainHold(replica string) *GainHold {
	return &GainHold{replica: replica, release: make(chan struct{})}
}

// Wrap is the Options.WrapKube that holds the replica's lists while Hold is on.
func (h *GainHold) Wrap(id string, rt http.RoundTripper) http.RoundTripper {
	if id != h.replica {
		return rt
	}
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		q := req.URL.Query()
		if !h.on.Load() || req.Method != http.MethodGet || req.URL.Path != "/api/v1/pods" ||
			q.Get("watch") == "true" || !strings.Contains(q.Get("labelSelector"), shard.SlotLabel+" in (") {
			return rt.RoundTrip(req)
		}
		resp, err := rt.RoundTrip(req)
		h.seen.Store(true)
		h.held.Add(1)
		defer h.held.Add(-1)
		select {
		case <-h.release:
		case <-req.Context().Done():
			if resp != nil {
				resp.Body.Close()
			}
			return nil, req.Context().Err()
		}
		return resp, err
	})
}

// Hold starts holding the replica's gain lists.
func (h *GainHold) Hold() { h.on.Store(true) }

// Release lets every held answer through, and holds no more.
func (h *GainHold) Release() {
	h.once.Do(func() {
		h.on.Store(false)
		close(h.release)
	})
}

// Held reports whether any list was held back: a test that proves nothing otherwise fails on
// it.
func (h *GainHold) Held() bool { return h.seen.Load() }
