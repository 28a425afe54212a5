package bench

import (
	"context"
	"sync"
	"time"

	"github.com/ringfire/ringfire/e2e/procs"
)

// replicaProcess is one `ringfire run` process of a run, with the peak of
// its Go heap as sampled during the load.
type replicaProcess struct {
	*procs.Replica

	mu       sync.Mutex
	peakHeap float64   // highest go_memstats_heap_inuse_bytes sampled
	peakAt   time.Time // when it was sampled
}

// sampleHeap records the replica's Go heap in use every period until ctx
// is done; VmHWM gives the peak RSS, but only sampling gives the heap's.
func (r *replicaProcess) sampleHeap(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if v, err := r.Metric(ctx, "go_memstats_heap_inuse_bytes"); err == nil {
			r.mu.Lock()
			if v > r.peakHeap {
				r.peakHeap, r.peakAt = v, time.Now()
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
