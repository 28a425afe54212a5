package schedtest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/controllers/scheduler"
	"github.com/ringfire/ringfire/controllers/scheduler/core"
	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/membership"
	"github.com/ringfire/ringfire/shard"
)

// The ring the scheduler members of this test form, beside the stack's own
// (whose replicas run the Job controller only).
const (
	schedPrefix = "/ringfire-sched"
	schedSlots  = 16
	schedTTL    = 2 * time.Second
)

// member is a ring member running only the scheduler controller, wired as
// a replica wires its controllers.
type member struct {
	id      string
	client  *clientv3.Client
	manager *shard.Manager
	ctrl    *scheduler.Controller
	reg     *prometheus.Registry
	cancel  context.CancelFunc // stops the manager (gracefully, unless the client is closed first)
	done    chan struct{}
}

// cycleLog records every cycle of every member.
type cycleLog struct {
	mu     sync.Mutex
	cycles []cycle
}

type cycle struct {
	member     string
	start, end time.Time
}

func (l *cycleLog) add(c cycle) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cycles = append(l.cycles, c)
}

// since returns the cycles that started after t, by start.
func (l *cycleLog) since(t time.Time) []cycle {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []cycle
	for _, c := range l.cycles {
		if c.start.After(t) {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start.Before(out[j].start) })
	return out
}

// overlaps lists two cycles of different members that ran at the same time.
func (l *cycleLog) overlaps() []string {
	all := l.since(time.Time{})
	var bad []string
	for i := range all {
		for j := i + 1; j < len(all) && all[j].start.Before(all[i].end); j++ {
			if all[j].member != all[i].member {
				bad = append(bad, fmt.Sprintf("%s [%s..%s] and %s [%s..%s]",
					all[i].member, all[i].start.Format("15:04:05.000"), all[i].end.Format("15:04:05.000"),
					all[j].member, all[j].start.Format("15:04:05.000"), all[j].end.Format("15:04:05.000")))
			}
		}
	}
	return bad
}

func startMember(t *testing.T, s *stack.Stack, id string, log *cycleLog) *member {
	t.Helper()
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Ring.Endpoint()}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	logger := testLogger(t, id)
	mcfg := membership.DefaultConfig()
	mcfg.Client, mcfg.Prefix, mcfg.ID, mcfg.Logger = client, schedPrefix, id, logger
	mcfg.SetTTL(schedTTL)
	mem, err := membership.New(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	scfg := shard.DefaultManagerConfig()
	scfg.Client, scfg.Member, scfg.Prefix, scfg.Slots = client, mem, schedPrefix, schedSlots
	scfg.DrainTimeout, scfg.Logger = 5*time.Second, logger
	manager, err := shard.NewManager(scfg)
	if err != nil {
		t.Fatal(err)
	}
	kube, vc := clients(t, s)
	reg := prometheus.NewRegistry()
	ccfg := scheduler.DefaultConfig()
	ccfg.Kube, ccfg.Volcano, ccfg.Ownership, ccfg.Valid = kube, vc, manager, manager.Valid
	ccfg.Logger, ccfg.Registerer = logger, reg
	ccfg.Observe = func(start, end time.Time, _ core.Result) { log.add(cycle{member: id, start: start, end: end}) }
	ctrl, err := scheduler.New(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	manager.AddListener(ctrl)
	manager.AddDrainer(ctrl)

	ctx, cancel := context.WithCancel(context.Background())
	m := &member{id: id, client: client, manager: manager, ctrl: ctrl, reg: reg, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		// As in a replica: the controller outlives the manager's graceful
		// stop, which drains it first.
		work, stopWork := context.WithCancel(context.WithoutCancel(ctx))
		ctrlDone := make(chan struct{})
		go func() { defer close(ctrlDone); ctrl.Run(work) }()
		if err := manager.Run(ctx); err != nil {
			logger.Error("manager stopped", "error", err)
		}
		stopWork()
		<-ctrlDone
	}()
	t.Cleanup(func() { m.stop(t, false) })
	return m
}

// stop ends the member gracefully, or as kill -9 would (its etcd
// connection gone first, its lease left to expire).
func (m *member) stop(t *testing.T, kill bool) {
	select {
	case <-m.done:
		return
	default:
	}
	if kill {
		m.client.Close()
	}
	m.cancel()
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		t.Errorf("member %s did not stop within 30s", m.id)
	}
	if !kill {
		m.client.Close()
	}
}

// activeOne waits until exactly one of members runs the scheduler and returns it.
func activeOne(t *testing.T, limit time.Duration, members ...*member) *member {
	t.Helper()
	var holder *member
	stack.WaitFor(t, "exactly one member runs the scheduler", limit, func() (bool, string) {
		var active []string
		holder = nil
		for _, m := range members {
			if m.ctrl.Active() {
				active = append(active, m.id)
				holder = m
			}
		}
		return len(active) == 1, fmt.Sprintf("active: %v", active)
	})
	return holder
}

// moveTime waits for the first cycle of a member other than from, started
// after since, and returns how long after since it started.
func moveTime(t *testing.T, log *cycleLog, from string, since time.Time, limit time.Duration) (time.Duration, string) {
	t.Helper()
	var took time.Duration
	var to string
	stack.WaitFor(t, "another member runs a cycle", limit, func() (bool, string) {
		for _, c := range log.since(since) {
			if c.member != from {
				took, to = c.start.Sub(since), c.member
				return true, ""
			}
		}
		return false, "no cycle elsewhere yet"
	})
	return took, to
}

// singletonMoves: two scheduler members over real etcd; the scheduler runs
// on exactly one. Stopped gracefully, and later killed, its holder hands
// it to another member within TTL + 1s, while gangs keep arriving; no two
// members' cycles ever overlap, and no pod is bound twice or met a
// binding conflict.
func singletonMoves(t *testing.T, s *stack.Stack) {
	log := &cycleLog{}
	members := []*member{startMember(t, s, "s0", log), startMember(t, s, "s1", log)}
	all := slices.Clone(members)
	holder := activeOne(t, 20*time.Second, members...)
	since := time.Now()
	time.Sleep(time.Second)
	for _, c := range log.since(since) {
		if c.member != holder.id {
			t.Fatalf("%s ran a cycle while %s holds the scheduler", c.member, holder.id)
		}
	}

	// Gangs keep arriving through both handovers.
	ctx, stopJobs := context.WithCancel(context.Background())
	defer stopJobs()
	var names []string
	var mu sync.Mutex
	jobsDone := make(chan struct{})
	go func() {
		defer close(jobsDone)
		for i := 0; ctx.Err() == nil; i++ {
			name := fmt.Sprintf("flow-%02d", i)
			if _, err := s.Volcano.BatchV1alpha1().Jobs(ns).Create(ctx, job(name, "default", 2, "1", "1s"), metav1.CreateOptions{}); err != nil {
				if ctx.Err() == nil {
					t.Errorf("create job %s: %v", name, err)
				}
				return
			}
			mu.Lock()
			names = append(names, name)
			mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()

	// A graceful stop hands the scheduler over at once.
	time.Sleep(time.Second)
	stopped := time.Now()
	holder.stop(t, false)
	took, to := moveTime(t, log, holder.id, stopped, 10*time.Second)
	t.Logf("graceful stop of %s: %s ran its first cycle %v later", holder.id, to, took.Round(time.Millisecond))
	if took > schedTTL+time.Second {
		t.Errorf("the scheduler moved %v after a graceful stop, want within TTL+1s = %v", took, schedTTL+time.Second)
	}

	// A new member joins; wherever the scheduler lands, one runs it.
	s2 := startMember(t, s, "s2", log)
	all = append(all, s2)
	members = append(slices.DeleteFunc(members, func(m *member) bool { return m == holder }), s2)
	time.Sleep(time.Second) // the ring rebalances
	holder = activeOne(t, 20*time.Second, members...)

	// A kill leaves the lease to expire.
	time.Sleep(time.Second)
	killed := time.Now()
	holder.stop(t, true)
	took, to = moveTime(t, log, holder.id, killed, 15*time.Second)
	t.Logf("kill of %s: %s ran its first cycle %v later (TTL %v)", holder.id, to, took.Round(time.Millisecond), schedTTL)
	if took > schedTTL+time.Second {
		t.Errorf("the scheduler moved %v after a kill, want within TTL+1s = %v", took, schedTTL+time.Second)
	}

	time.Sleep(time.Second)
	stopJobs()
	<-jobsDone
	mu.Lock()
	created := slices.Clone(names)
	mu.Unlock()
	for _, name := range created {
		s.WaitPhase(ns, name, 60*time.Second, batch.Completed)
	}
	if bad := log.overlaps(); len(bad) > 0 {
		t.Errorf("cycles of two members overlapped: %v", bad)
	}
	conflicts := 0.0
	for _, m := range all {
		conflicts += counter(t, m.reg, "ringfire_scheduler_bind_failures_total", map[string]string{"reason": "conflict"})
	}
	if conflicts > 0 {
		t.Errorf("%v bindings met a pod bound already", conflicts)
	}
	t.Logf("%d gangs of 2 ran to Completed through the handovers; %d cycles in all", len(created), len(log.since(time.Time{})))
	for _, m := range members {
		m.stop(t, false)
	}
	deleteJobs(t, s, created...)
}
