package memcg

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ringfire/ringfire/e2e/procs"
)

// Fleet is the replicas of a run, each in a Group of its own with the same
// limit, started, stopped and audited together. A replica may be killed on
// purpose (Kill) and started again in its Group (Restart): the audit does
// not count that exit, and counts every other.
type Fleet struct {
	args  procs.Args
	limit int64
	tag   string

	mu      sync.Mutex
	ids     []string
	members map[string]*member
}

// member is one replica id of the fleet: its current process, its Group
// (nil where the machine has none to make) and how often it was killed on
// purpose.
type member struct {
	current *procs.Replica
	group   *Group
	kills   int
	killed  bool // current was killed on purpose and not yet restarted
}

// NewFleet is a fleet of replicas started with args, each limited to limit
// bytes; tag tells its cgroups from another fleet's of the same run. When
// the test ends the replicas are stopped, their cgroups removed and, if it
// failed, each replica's log tail written to stderr.
func NewFleet(t testing.TB, args procs.Args, limit int64, tag string) *Fleet {
	f := &Fleet{args: args, limit: limit, tag: tag, members: map[string]*member{}}
	t.Cleanup(func() {
		procs.StopAll(t, f.Replicas())
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, id := range f.ids {
			if g := f.members[id].group; g != nil {
				g.Remove()
			}
		}
		if t.Failed() {
			for _, id := range f.ids { // to stderr, ahead of the failures (see cluster.StartForTest)
				r := f.members[id].current
				fmt.Fprintf(os.Stderr, "=== %s failed: replica %s log tail:\n%s\n", t.Name(), r.ID, r.LogTail(60))
			}
		}
	})
	return f
}

// Start starts replica id in a cgroup of its own. A machine where the suite
// cannot make one (not root, no memory controller) runs the replica
// unlimited and says so; the audit then compares its peak resident memory
// with the bound instead.
func (f *Fleet) Start(t testing.TB, id string) *procs.Replica {
	t.Helper()
	a := f.args
	g, err := New(fmt.Sprintf("%d-%s-%s", os.Getpid(), f.tag, id), f.limit)
	if err != nil {
		t.Logf("replica %s runs without a memory cgroup: %v", id, err)
	} else if a.Bin, err = g.Wrapper(a.LogDir, a.Bin); err != nil {
		g.Remove()
		t.Fatal(err)
	}
	r := procs.Start(t, a, id)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ids = append(f.ids, id)
	f.members[id] = &member{current: r, group: g}
	return r
}

// Replicas are the fleet's current processes, in the order started.
func (f *Fleet) Replicas() []*procs.Replica {
	f.mu.Lock()
	defer f.mu.Unlock()
	rs := make([]*procs.Replica, 0, len(f.ids))
	for _, id := range f.ids {
		rs = append(rs, f.members[id].current)
	}
	return rs
}

// Replica is the current process of replica id, or nil.
func (f *Fleet) Replica(id string) *procs.Replica {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m := f.members[id]; m != nil {
		return m.current
	}
	return nil
}

// killWait bounds how long Kill waits for the killed process to be reaped.
const killWait = 10 * time.Second

// Kill kills replica id with SIGKILL, as a node's loss or the kernel's OOM
// killer would, and waits until it has exited. The audit does not count
// this exit.
func (f *Fleet) Kill(t testing.TB, id string) {
	t.Helper()
	f.mu.Lock()
	m := f.members[id]
	if m != nil {
		m.kills++
		m.killed = true
	}
	f.mu.Unlock()
	if m == nil {
		t.Fatalf("no replica %s to kill", id)
	}
	if err := m.current.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill replica %s: %v", id, err)
	}
	deadline := time.Now().Add(killWait)
	for !m.current.Exited() {
		if time.Now().After(deadline) {
			t.Fatalf("replica %s has not exited %v after SIGKILL", id, killWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Restart starts replica id again after Kill, in the same cgroup, as a
// container runtime restarts a container; its log goes on after the earlier
// run's.
func (f *Fleet) Restart(t testing.TB, id string) *procs.Replica {
	t.Helper()
	f.mu.Lock()
	m := f.members[id]
	f.mu.Unlock()
	if m == nil || !m.current.Exited() {
		t.Fatalf("replica %s is not a killed replica of the fleet", id)
	}
	a := f.args
	if m.group != nil {
		var err error
		if a.Bin, err = m.group.Wrapper(a.LogDir, a.Bin); err != nil {
			t.Fatal(err)
		}
	}
	r := procs.Start(t, a, id)
	f.mu.Lock()
	m.current, m.killed = r, false
	f.mu.Unlock()
	return r
}

// Down names the replicas whose process has exited but not by Kill: a
// suite stops waiting on a ring that has lost them.
func (f *Fleet) Down() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var down []string
	for _, id := range f.ids {
		if m := f.members[id]; !m.killed && m.current.Exited() {
			down = append(down, id)
		}
	}
	return down
}

// Group is the cgroup of replica id, or nil where it runs without one.
func (f *Fleet) Group(id string) *Group {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m := f.members[id]; m != nil {
		return m.group
	}
	return nil
}

// Usage is what the audit found of one replica.
type Usage struct {
	ID string
	// Peak is its cgroup's peak, over every run of the replica, or its
	// current process's peak resident memory where it has no cgroup.
	Peak int64
	// PeakRSS is the current process's peak resident memory.
	PeakRSS  int64
	OOMKills int64
	// Kills is how often it was killed on purpose.
	Kills int
}

// Audit checks what every suite of replicas in cgroups relies on: no
// replica exited but by Kill, none was OOM-killed, and none peaked above
// bound bytes. It logs and returns what it found of each.
func (f *Fleet) Audit(t testing.TB, bound int64) []Usage {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []Usage
	for _, id := range f.ids {
		m := f.members[id]
		r := m.current
		if r.Exited() && !m.killed {
			t.Errorf("replica %s exited during the suite; its log ends:\n%s", id, r.LogTail(40))
		}
		if m.killed {
			t.Errorf("replica %s was killed on purpose and never started again", id)
		}
		u := Usage{ID: id, PeakRSS: PeakRSS(r.PID()), Kills: m.kills}
		if m.group == nil {
			u.Peak = u.PeakRSS
			t.Logf("replica %s: peak resident memory %d MiB (no cgroup), killed on purpose %d times", id, u.Peak>>20, u.Kills)
		} else {
			var err error
			if u.Peak, err = m.group.Peak(); err != nil {
				t.Errorf("replica %s: read its cgroup's peak: %v", id, err)
			}
			if u.OOMKills, err = m.group.OOMKills(); err != nil {
				t.Logf("replica %s: read its cgroup's OOM kills: %v", id, err)
			}
			if u.OOMKills > 0 {
				t.Errorf("replica %s: %d processes OOM-killed in its cgroup (limit %d MiB)", id, u.OOMKills, f.limit>>20)
			}
			t.Logf("replica %s: cgroup peak %d MiB of %d MiB, peak resident %d MiB, OOM kills %d, killed on purpose %d times",
				id, u.Peak>>20, f.limit>>20, u.PeakRSS>>20, u.OOMKills, u.Kills)
		}
		if u.Peak > bound {
			t.Errorf("replica %s peaked at %d MiB, above the bound of %d MiB", id, u.Peak>>20, bound>>20)
		}
		all = append(all, u)
	}
	return all
}
