package replica

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// UserAgent is the User-Agent of every API request a replica makes:
// "ringfire/<id>".
func UserAgent(id string) string { return "ringfire/" + id }

// Ready reports why the replica is not ready, or nil: it is ready while it is
// a member that has read the ring and, when it manages a cluster, while the
// API server answers its readiness endpoint, once its caches have listed.
func (r *Replica) Ready() error {
	if !r.Manager.Ready() {
		return errors.New("not a member of the ring yet: etcd unreachable or not answering (see the log)")
	}
	if r.Cache != nil {
		if err := r.api.Err(); err != nil {
			return err
		}
		if !r.Cache.Synced() {
			return errors.New("the cluster-wide caches have not listed yet (is every Volcano CRD installed? see the log)")
		}
	}
	return nil
}

// The API server probe. A replica asks the API server's /readyz once a
// second, through its own client configuration (same host, TLS and
// credentials as the controllers) but outside their rate limiter, so a busy
// replica is not taken for a cut-off one. The answer is the API server's own
// statement that it serves requests, and it is cheap: a GET of a few bytes
// answered from the server's memory, one per replica per second.
//
// Watching the cache's informers instead would cost nothing extra but tells
// too little: an informer stays synced after its watch breaks, its watch
// error handler must be set inside the cache before it starts, and a quiet
// watch cannot tell a dead server from an idle one.
const (
	apiProbeInterval = time.Second
	apiProbeTimeout  = 2 * time.Second
	// apiDownReminder is how often a replica repeats in its log that the
	// API server still does not answer.
	apiDownReminder = 30 * time.Second
)

// apiHealth is the last answer of the API server probe.
type apiHealth struct {
	mu    sync.Mutex
	err   error     // nil while the API server answers
	down  time.Time // when it stopped answering, zero while it answers
	known bool      // a probe has answered at least once, either way
}

// Err is nil while the API server answers.
func (h *apiHealth) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.known {
		return errors.New("API server not checked yet")
	}
	return h.err
}

// set records a probe's outcome and reports how long the server had been
// down when it answers again, and whether this probe changed the state.
func (h *apiHealth) set(err error, now time.Time) (changed bool, downFor time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	wasDown := !h.known || h.err != nil
	first := !h.known
	h.known, h.err = true, err
	switch {
	case err != nil && (first || !wasDown):
		h.down = now
		return true, 0
	case err == nil && wasDown:
		if !h.down.IsZero() {
			downFor = now.Sub(h.down)
		}
		h.down = time.Time{}
		return !first, downFor
	}
	return false, 0
}

// probeAPIServer asks the API server whether it is ready every
// apiProbeInterval until ctx is done, and logs each change.
func (r *Replica) probeAPIServer(ctx context.Context) {
	log := r.cfg.Logger.Named("apiserver")
	cfg := rest.CopyConfig(r.cfg.Kube)
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	cfg.Timeout = apiProbeTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		r.api.set(fmt.Errorf("API server %s: client: %w", cfg.Host, err), time.Now())
		log.Error("cannot build the API server probe; not ready", "error", err)
		return
	}
	var lastReminder time.Time
	for {
		body, err := dc.RESTClient().Get().AbsPath("/readyz").Do(ctx).Raw()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if failing := failingChecks(body); failing != "" {
				err = fmt.Errorf("API server %s not ready: failing checks %s", cfg.Host, failing)
			} else {
				err = fmt.Errorf("API server %s unreachable or not ready: %w", cfg.Host, err)
			}
		}
		now := time.Now()
		changed, downFor := r.api.set(err, now)
		switch {
		case changed && err != nil:
			log.Error("API server unreachable; not ready until it answers", "host", cfg.Host, "error", err)
			lastReminder = now
		case changed:
			log.Info("API server answers again; ready", "host", cfg.Host, "down_for", downFor.Round(time.Millisecond))
		case err != nil && now.Sub(lastReminder) >= apiDownReminder:
			log.Warn("API server still unreachable; not ready", "host", cfg.Host, "error", err)
			lastReminder = now
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(apiProbeInterval):
		}
	}
}

// failingChecks names the failing checks of a /readyz answer ("[-]etcd
// failed: reason withheld" lines), or "" if the answer lists none.
func failingChecks(body []byte) string {
	var names []string
	for _, line := range strings.Split(string(body), "\n") {
		if name, ok := strings.CutPrefix(line, "[-]"); ok {
			name, _, _ = strings.Cut(name, " ")
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}
