package bench

import (
	"context"
	"sync"
	"time"

	"github.com/ringfire/ringfire/e2e/procs"
)

// replicaProcess is one `ringfire run` process of a run, with the peak of
// its Go heap as sampled during the load, and when its gang scheduler was
// last seen binding.
type replicaProcess struct {
	*procs.Replica

	mu       sync.Mutex
	peakHeap float64   // highest go_memstats_heap_inuse_bytes sampled
	peakAt   time.Time // when it was sampled
	bound    float64   // ringfire_scheduler_pods_bound_total, last sampled
	boundAt  time.Time // when it was first seen at that value (zero: never bound)
}

// sampleHeap records the replica's Go heap in use, and its scheduler's
// count of pods bound, every period until ctx is done; VmHWM gives the
// peak RSS, but only sampling gives the heap's, and the time of the last
// binding.
func (r *replicaProcess) sampleHeap(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if body, code, err := r.Get(ctx, "/metrics"); err == nil && code == 200 {
			now := time.Now()
			r.mu.Lock()
			if v, ok := procs.MetricValue(body, "go_memstats_heap_inuse_bytes"); ok && v > r.peakHeap {
				r.peakHeap, r.peakAt = v, now
			}
			if v, ok := procs.MetricValue(body, "ringfire_scheduler_pods_bound_total"); ok && v > r.bound {
				r.bound, r.boundAt = v, now
			}
			r.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// lastBind returns the pods the replica's scheduler bound so far (as last
// sampled) and when that count was first seen.
func (r *replicaProcess) lastBind() (float64, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bound, r.boundAt
}

// sampledPeakHeap returns the highest heap in use sampled, and when.
func (r *replicaProcess) sampledPeakHeap() (float64, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.peakHeap, r.peakAt
}

// processes returns the replicas as the procs package knows them.
func processes(replicas []*replicaProcess) []*procs.Replica {
	out := make([]*procs.Replica, len(replicas))
	for i, r := range replicas {
		out[i] = r.Replica
	}
	return out
}
