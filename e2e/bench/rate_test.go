package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// createJobsAtRate creates the Jobs at l.rate a second, steadily: a ticker
// starts each create on time, whatever the ones before it take, so that a
// slow API server or a backlog in ringfire shows as latency, not as a lower
// rate. It records when each create returned.
func (l load) createJobsAtRate(ctx context.Context, created []time.Time) error {
	tick := time.NewTicker(time.Second / time.Duration(l.rate))
	defer tick.Stop()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
create:
	for i := range l.jobs {
		if i > 0 {
			select {
			case <-ctx.Done():
				mu.Lock()
				errs = append(errs, ctx.Err())
				mu.Unlock()
				break create
			case <-tick.C:
			}
		}
		wg.Go(func() {
			err := l.createJob(ctx, jobName(i))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			created[i] = time.Now()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// window is the Jobs created within one stretch of the load.
type window struct {
	from      time.Duration // since the first create
	latencies []time.Duration
	missing   int                // Jobs whose pods were not all seen
	steps     [][3]time.Duration // the Jobs' chain steps, where seen (load.steps)
}

// windows groups the Jobs by when their create returned, width apart, with
// each Job's create → last pod seen.
func windows(res loadResult, width time.Duration) []window {
	var out []window
	for i, at := range res.created {
		if at.IsZero() {
			continue
		}
		n := int(at.Sub(res.start) / width)
		for len(out) <= n {
			out = append(out, window{from: time.Duration(len(out)) * width})
		}
		if res.done[i].IsZero() {
			out[n].missing++
			continue
		}
		out[n].latencies = append(out[n].latencies, max(0, res.done[i].Sub(at)))
		if s, ok := res.chain.steps(jobName(i), at, res.done[i]); ok {
			out[n].steps = append(out[n].steps, s)
		}
	}
	for i := range out {
		slices.Sort(out[i].latencies)
	}
	return out
}

// reportWindows prints, per window of Job creation time, how many Jobs
// were created and their create → all pods p50 and p99, so that a backlog
// shows as a rising line, and, where the load watched the steps, each
// step's p50/max; it returns the worst window's p99.
func reportWindows(ws []window, width time.Duration) (string, time.Duration) {
	var t strings.Builder
	fmt.Fprintf(&t, "per %v of Job creation, create → last pod seen:\n  %9s %5s %8s %8s", width, "from", "Jobs", "p50", "p99")
	if slices.ContainsFunc(ws, func(w window) bool { return len(w.steps) > 0 }) {
		for _, name := range stepNames {
			fmt.Fprintf(&t, " %16s", name+" p50/max")
		}
	}
	t.WriteString("\n")
	worst := time.Duration(0)
	for _, w := range ws {
		p99 := percentile(w.latencies, 99)
		worst = max(worst, p99)
		fmt.Fprintf(&t, "  %8.0fs %5d %7.2fs %7.2fs", w.from.Seconds(), len(w.latencies)+w.missing, percentile(w.latencies, 50).Seconds(), p99.Seconds())
		if len(w.steps) > 0 {
			for i := range stepNames {
				p50, most := stepStats(w.steps, i)
				fmt.Fprintf(&t, " %16s", fmt.Sprintf("%.2f/%.2f", p50.Seconds(), most.Seconds()))
			}
		}
		if w.missing > 0 {
			fmt.Fprintf(&t, "  (%d without all pods)", w.missing)
		}
		t.WriteString("\n")
	}
	return t.String(), worst
}
