package shard

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// The benchmarks push 10,000 keys × 5 requests through a queue and W workers
// with a trivial handler, from one producer (like an informer's event
// handler) interleaving the keys, and time it until every key's last request
// is handled. One op is one such run; req/s is requests enqueued per
// second of it.
//
// client-go's workqueue keeps a set, not a FIFO: a key added while it waits
// is merged with itself, so it handles fewer calls (calls/req < 1) and knows
// nothing of order. The Dispatcher handles every request in order
// ("ordered"; "ordered+metrics" with its metrics registered, which costs three
// clock reads per request), or merges waiting requests ("coalesced", what the
// workqueue does to every request).
const (
	dispatchBenchKeys   = 10_000
	dispatchBenchPerKey = 5
)

var dispatchBenchWorkers = []int{1, 4, 16}

func dispatchBenchKeyNames() []string {
	keys := make([]string, dispatchBenchKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("namespace-%d/job-%d", i%100, i)
	}
	return keys
}

// dispatchBenchMode is a way to run the Dispatcher.
type dispatchBenchMode struct {
	name     string
	coalesce bool // merge every waiting request, as the workqueue does
	metrics  bool // register the metrics, which adds clock reads
}

func BenchmarkDispatcher(b *testing.B) {
	keys := dispatchBenchKeyNames()
	for _, mode := range []dispatchBenchMode{
		{name: "ordered"},
		{name: "ordered+metrics", metrics: true},
		{name: "coalesced", coalesce: true},
	} {
		for _, w := range dispatchBenchWorkers {
			b.Run(fmt.Sprintf("%s/W=%d", mode.name, w), func(b *testing.B) {
				benchmarkDispatcher(b, keys, w, mode)
			})
		}
	}
}

func benchmarkDispatcher(b *testing.B, keys []string, workers int, mode dispatchBenchMode) {
	var calls atomic.Int64
	var elapsed time.Duration
	for range b.N {
		run := newDispatchBenchRun(keys)
		cfg := DefaultDispatcherConfig[int]()
		cfg.Name = "bench"
		cfg.Workers = workers
		cfg.Ownership = HoldAll{}
		cfg.Handler = func(_ context.Context, key string, seq int) error {
			calls.Add(1)
			if mode.coalesce {
				run.handlerStarted(key)
			} else if seq == dispatchBenchPerKey-1 {
				run.lastHandled(key)
			}
			return nil
		}
		if mode.coalesce {
			cfg.Coalesce = func(queued, incoming int) bool { return true }
		}
		if mode.metrics {
			cfg.Registerer = prometheus.NewRegistry()
		}
		d, err := NewDispatcher(cfg)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { d.Run(ctx) })

		start := time.Now()
		run.produce(func(key string, seq int) { d.Enqueue(key, seq) })
		<-run.done
		elapsed += time.Since(start)
		cancel()
		wg.Wait()
	}
	reportThroughput(b, elapsed, calls.Load())
}

func BenchmarkWorkqueue(b *testing.B) {
	keys := dispatchBenchKeyNames()
	for _, w := range dispatchBenchWorkers {
		b.Run(fmt.Sprintf("W=%d", w), func(b *testing.B) {
			benchmarkWorkqueue(b, keys, w)
		})
	}
}

// benchmarkWorkqueue drives client-go's typed rate-limiting queue the way
// Volcano's controllers and sample-controller do: Add, Get, handle, Forget,
// Done.
func benchmarkWorkqueue(b *testing.B, keys []string, workers int) {
	var calls atomic.Int64
	var elapsed time.Duration
	for range b.N {
		run := newDispatchBenchRun(keys)
		queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for {
					key, shutdown := queue.Get()
					if shutdown {
						return
					}
					calls.Add(1)
					run.handlerStarted(key)
					queue.Forget(key)
					queue.Done(key)
				}
			})
		}

		start := time.Now()
		run.produce(func(key string, _ int) { queue.Add(key) })
		<-run.done
		elapsed += time.Since(start)
		queue.ShutDown()
		wg.Wait()
	}
	reportThroughput(b, elapsed, calls.Load())
}

// dispatchBenchRun tracks one run: it is done once every key's last request has
// been handled.
type dispatchBenchRun struct {
	keys      []string
	index     map[string]int
	latest    []atomic.Int32 // seq of each key's last request enqueued
	finished  []atomic.Bool
	remaining atomic.Int32
	done      chan struct{}
}

func newDispatchBenchRun(keys []string) *dispatchBenchRun {
	r := &dispatchBenchRun{
		keys:     keys,
		index:    make(map[string]int, len(keys)),
		latest:   make([]atomic.Int32, len(keys)),
		finished: make([]atomic.Bool, len(keys)),
		done:     make(chan struct{}),
	}
	for i, key := range keys {
		r.index[key] = i
	}
	r.remaining.Store(int32(len(keys)))
	return r
}

// produce enqueues every key's requests, the keys interleaved.
func (r *dispatchBenchRun) produce(enqueue func(key string, seq int)) {
	for seq := range dispatchBenchPerKey {
		for i, key := range r.keys {
			r.latest[i].Store(int32(seq))
			enqueue(key, seq)
		}
	}
}

// handlerStarted is for queues that merge requests: a handler call that
// starts after a key's last request was enqueued covers it.
func (r *dispatchBenchRun) handlerStarted(key string) {
	if r.latest[r.index[key]].Load() == dispatchBenchPerKey-1 {
		r.lastHandled(key)
	}
}

func (r *dispatchBenchRun) lastHandled(key string) {
	if !r.finished[r.index[key]].Swap(true) && r.remaining.Add(-1) == 0 {
		close(r.done)
	}
}

func reportThroughput(b *testing.B, elapsed time.Duration, calls int64) {
	reqs := float64(b.N) * dispatchBenchKeys * dispatchBenchPerKey
	b.ReportMetric(reqs/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(calls)/reqs, "calls/req")
}
