package bench

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// defaultQuiet is how long no write may come, from the replicas, the
// benchmark's clients, or on any kind ringfire may write as the API server
// counts it, before counts are taken (RINGFIRE_BENCH_QUIET): long enough
// for Event batching, a requeue after a conflict, the Job controller's
// status coalescing window (1 s) and the API server's own accounting.
// Writes ringfire defers longer (the gang scheduler's PodsQuiet, 30 s, for
// a PodGroup that outlives its pods) need a longer one; the summary says
// how many writes came after the counts were taken.
const defaultQuiet = 3 * time.Second

// reading is one reading of the request counters: the API server's, each
// replica's own, and the benchmark's clients'.
type reading struct {
	apiserver  requestCounts
	replicas   requestCounts            // summed over the replicas
	perReplica map[string]requestCounts // by replica id
	bench      requestCounts
}

// read takes a reading.
func (e *env) read(ctx context.Context) (reading, error) {
	var r reading
	metrics, err := e.cluster.APIServerMetrics(ctx)
	if err != nil {
		return r, err
	}
	if r.apiserver, err = apiserverRequests(metrics); err != nil {
		return r, err
	}
	if r.perReplica, err = e.replicaRequests(ctx); err != nil {
		return r, err
	}
	r.replicas = requestCounts{}
	for _, rc := range r.perReplica {
		r.replicas.add(rc)
	}
	r.bench = e.benchRequests()
	return r, nil
}

// replicaRequests reads each replica's rest_client_requests_total.
func (e *env) replicaRequests(ctx context.Context) (map[string]requestCounts, error) {
	out := map[string]requestCounts{}
	for _, r := range e.replicas {
		body, code, err := r.Get(ctx, "/metrics")
		if err == nil && code != 200 {
			err = fmt.Errorf("HTTP %d", code)
		}
		if err != nil {
			return nil, fmt.Errorf("replica %s /metrics: %w", r.ID, err)
		}
		rc, err := replicaRequests(body)
		if err != nil {
			return nil, fmt.Errorf("replica %s: %w", r.ID, err)
		}
		out[r.ID] = rc
	}
	return out, nil
}

// benchRequests sums the benchmark's clients' counts.
func (e *env) benchRequests() requestCounts {
	sum := requestCounts{}
	for _, c := range e.clients {
		sum.add(c.snapshot())
	}
	return sum
}

// ownWrites is the writes the replicas and the benchmark's clients have
// sent so far, cheap to read often.
func (e *env) ownWrites(ctx context.Context) (float64, error) {
	replicas, err := e.replicaRequests(ctx)
	if err != nil {
		return 0, err
	}
	n := e.benchRequests().writes()
	for _, rc := range replicas {
		n += rc.writes()
	}
	return n, nil
}

// onRingfireKinds sums the API server's writes on the kinds ringfire may
// write: with the control plane's, they also show an Event or a write of a
// replica still in flight.
func onRingfireKinds(c requestCounts) float64 {
	sum := 0.0
	for k, v := range c {
		if k.isWrite() && ringfireMayWrite(k) {
			sum += v
		}
	}
	return sum
}

// waitQuiet waits, up to limit, until neither the replicas nor the
// benchmark's clients have written for quiet and the API server's count
// of writes on ringfire's kinds did not move over a further quiet, and
// returns the last reading. On timeout it returns the last reading too,
// with an error.
func (e *env) waitQuiet(ctx context.Context, quiet, limit time.Duration) (reading, error) {
	deadline := time.Now().Add(limit)
	mark, since := -1.0, time.Now()
	var confirm *reading // the API server's reading at the start of a quiet stretch
	var last reading
	var lastErr error
	for time.Now().Before(deadline) {
		n, err := e.ownWrites(ctx)
		switch {
		case err != nil:
			lastErr, mark, confirm = err, -1, nil
		case n != mark:
			mark, since, confirm = n, time.Now(), nil
		case time.Since(since) >= quiet:
			r, err := e.read(ctx)
			if err != nil {
				lastErr, mark, confirm = err, -1, nil
				break
			}
			last = r
			if confirm != nil && onRingfireKinds(confirm.apiserver) == onRingfireKinds(r.apiserver) && r.replicas.writes()+r.bench.writes() == mark {
				return r, nil
			}
			confirm, since = &r, time.Now()
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	if last.apiserver == nil {
		var err error
		if last, err = e.read(ctx); err != nil {
			return last, errors.Join(err, lastErr)
		}
	}
	return last, fmt.Errorf("writes did not stop for %v within %v (last error: %v)", 2*quiet, limit, lastErr)
}

// finished reports whether a Job is in a phase it does not leave by itself.
func finished(p batch.JobPhase) bool {
	switch p {
	case batch.Completed, batch.Failed, batch.Terminated, batch.Aborted:
		return true
	}
	return false
}

// waitJobsFinished waits, up to limit, until the watch has seen jobs Jobs
// finished, and returns the Jobs by phase and when the last one finished.
func waitJobsFinished(ctx context.Context, w *jobWatch, jobs int, limit time.Duration) (map[batch.JobPhase]int, time.Time, error) {
	deadline := time.Now().Add(limit)
	for {
		phases, done, last := w.state()
		if done >= jobs {
			return phases, last, nil
		}
		if time.Now().After(deadline) {
			return phases, last, fmt.Errorf("%d of %d Jobs finished within %v: %s", done, jobs, limit, describePhases(phases))
		}
		select {
		case <-ctx.Done():
			return phases, last, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// describePhases prints "Completed 498, Running 2".
func describePhases(phases map[batch.JobPhase]int) string {
	names := make([]string, 0, len(phases))
	for p := range phases {
		names = append(names, string(p))
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, p := range names {
		name := p
		if name == "" {
			name = "(no phase)"
		}
		parts[i] = fmt.Sprintf("%s %d", name, phases[batch.JobPhase(p)])
	}
	return strings.Join(parts, ", ")
}
