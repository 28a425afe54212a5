package chaostest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/stack"

	"github.com/ringfire/ringfire/internal/logbuf"
)

// readiness records, from outside, every stretch of time each replica
// reported itself not ready, by polling its Ready.
type readiness struct {
	mu        sync.Mutex
	down      map[string]*notReady // open stretch per replica
	stretches []notReady
	cancel    context.CancelFunc
	done      chan struct{}
}

type notReady struct {
	replica    string
	start, end time.Time
	reason     string
}

func watchReadiness(s *stack.Stack, every time.Duration) *readiness {
	ctx, cancel := context.WithCancel(context.Background())
	rd := &readiness{down: map[string]*notReady{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rd.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			for _, id := range s.IDs() {
				rd.see(id, s.Ready(id), time.Now())
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return rd
}

func (rd *readiness) see(id string, err error, now time.Time) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	open := rd.down[id]
	switch {
	case err != nil && open == nil:
		rd.down[id] = &notReady{replica: id, start: now, reason: err.Error()}
	case err == nil && open != nil:
		open.end = now
		rd.stretches = append(rd.stretches, *open)
		delete(rd.down, id)
	}
}

func (rd *readiness) stop() {
	rd.cancel()
	<-rd.done
}

// since returns the stretches that began at or after t, closed or not.
func (rd *readiness) since(t time.Time) []notReady {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	var out []notReady
	for _, nr := range rd.stretches {
		if !nr.start.Before(t) {
			out = append(out, nr)
		}
	}
	for _, nr := range rd.down {
		if !nr.start.Before(t) {
			out = append(out, *nr)
		}
	}
	return out
}

// settled waits until the recorder has seen every replica ready again, so
// that every stretch is closed.
func (rd *readiness) settled(limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		rd.mu.Lock()
		open := len(rd.down)
		rd.mu.Unlock()
		if open == 0 {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// waitAllReady waits until every running replica reports ready.
func waitAllReady(t *testing.T, s *stack.Stack, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		var bad []string
		for _, id := range s.IDs() {
			if err := s.Ready(id); err != nil {
				bad = append(bad, id+": "+err.Error())
			}
		}
		if len(bad) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replicas not ready within %v: %s", limit, strings.Join(bad, "; "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Three replicas run Jobs while the API server is restarted twice, once
// gracefully and once killed. Each replica keeps running, reports not ready
// with a reason naming the API server while it is gone, logs why, and is
// ready again by itself once the API server is back; every Job completes,
// no pod is created twice, no Job is reconciled by two replicas at once.
func TestAPIServerRestart(t *testing.T) {
	const ttl = 5 * time.Second // the default of `ringfire run`
	var logs logbuf.Buffer
	s := stack.Start(t, stack.Options{Replicas: 3, Nodes: 4, StandIn: true, LeaseTTL: ttl, LogOutput: &logs})
	ids := s.IDs()
	waitAllReady(t, s, 30*time.Second)
	pods := watchPodCreations(t, s)
	rd := watchReadiness(s, 50*time.Millisecond)
	defer rd.stop()
	l := startLoad(t, s, "api", 200, 100*time.Millisecond)

	for _, kill := range []bool{false, true} {
		time.Sleep(4 * time.Second) // Jobs being created and running
		how := map[bool]string{false: "graceful (SIGTERM)", true: "kill (SIGKILL)"}[kill]
		begin := time.Now()
		if err := s.Cluster.Restart(cluster.APIServer, kill); err != nil {
			t.Fatal(err)
		}
		stopped := time.Since(begin)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := s.Cluster.WaitReady(ctx)
		cancel()
		if err != nil {
			t.Fatalf("API server not back after a %s restart: %v", how, err)
		}
		back := time.Since(begin)
		waitAllReady(t, s, 30*time.Second)
		allReady := time.Since(begin)
		if !rd.settled(5 * time.Second) {
			t.Errorf("the readiness recorder still sees a replica not ready 5s after all were ready")
		}

		for _, id := range ids {
			if !s.Running(id) {
				t.Errorf("replica %s stopped running during the %s restart", id, how)
			}
			var total time.Duration
			var reasons []string
			for _, nr := range rd.since(begin) {
				if nr.replica != id {
					continue
				}
				total += nr.end.Sub(nr.start)
				reasons = append(reasons, nr.reason)
			}
			switch {
			case len(reasons) == 0:
				t.Errorf("replica %s was never seen not ready during the %s restart of the API server", id, how)
			case !strings.Contains(reasons[0], "API server"):
				t.Errorf("replica %s was not ready during the %s restart, but the reason does not name the API server: %q", id, how, reasons[0])
			default:
				t.Logf("%s restart: replica %s not ready for %v (%d stretch(es)): %s", how, id, total.Round(time.Millisecond), len(reasons), reasons[0])
			}
		}
		t.Logf("%s restart: old API server gone after %v, new one ready after %v, every replica ready again after %v",
			how, stopped.Round(time.Millisecond), back.Round(time.Millisecond), allReady.Round(time.Millisecond))
	}

	time.Sleep(3 * time.Second) // and Jobs keep coming after the last restart
	// The ring never moved: the API server is not part of it.
	if d := settle(t, s, ttl); d > time.Second {
		t.Logf("ring settled %v after the restarts", d.Round(time.Millisecond))
	}
	l.finish(pods, 3*time.Minute)

	out := logs.String()
	for _, id := range ids {
		name := fmt.Sprintf("stack.%s.apiserver", id)
		if n := countLines(out, name, "API server unreachable"); n < 2 {
			t.Errorf("replica %s logged %d times that the API server is unreachable, want one per restart (2)", id, n)
		}
	}
}

// countLines counts the log lines that contain every one of parts.
func countLines(out string, parts ...string) int {
	n := 0
	for _, line := range strings.Split(out, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}
