package adversarytest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// tally is what one attack's creates came to.
type tally struct {
	made, refused int64
	firstRefusal  string   // the first refusal's message
	failed        []string // errors that are no refusal
	began         time.Time
}

// createAll sends create(ctx, i) for i from 0 to n from workers clients at once, each with a
// minute, and stops early once a replica is down. An error refusal reports true for counts as
// refused, any other as failed.
func (w *world) createAll(n, workers int, refusal func(error) bool, create func(ctx context.Context, i int) error) tally {
	tl := tally{began: time.Now()}
	var mu sync.Mutex
	work := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range work {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				err := create(ctx, i)
				cancel()
				mu.Lock()
				switch {
				case err == nil:
					tl.made++
				case refusal(err):
					tl.refused++
					if tl.firstRefusal == "" {
						tl.firstRefusal = err.Error()
					}
				default:
					tl.failed = append(tl.failed, fmt.Sprintf("%d: %v", i, err))
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		if len(w.fleet.Down()) > 0 {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	return tl
}

// report logs the tally of n creates of what and fails the test on any create that failed
// other than by a refusal.
func (tl tally) report(t *testing.T, n int, what string) {
	t.Helper()
	t.Logf("%d %s: %d made, %d refused, in %v", n, what, tl.made, tl.refused, time.Since(tl.began).Round(time.Second))
	if tl.firstRefusal != "" {
		t.Logf("the first refusal: %.300s", tl.firstRefusal)
	}
	if len(tl.failed) > 0 {
		t.Errorf("%d creates failed other than by a refusal, the first: %s", len(tl.failed), tl.failed[0])
	}
}

// waitPodGroups waits until ns has a PodGroup for each of the made objects of what, and logs
// how long after the first create.
func (w *world) waitPodGroups(t *testing.T, ns, what string, tl tally) {
	t.Helper()
	if tl.made == 0 {
		return
	}
	w.waitFor(t, "every one of the "+what+" has its PodGroup", 3*time.Minute, func() (bool, string) {
		n, err := w.count(ns, w.volcano.SchedulingV1beta1().RESTClient(), "podgroups", "")
		if err != nil {
			return false, err.Error()
		}
		return int64(n) >= tl.made, fmt.Sprintf("%d PodGroups of %d %s", n, tl.made, what)
	})
	t.Logf("the %s' PodGroups are all made %v after the first create", what, time.Since(tl.began).Round(time.Second))
}
