package chaostest

import (
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
	"github.com/ringfire/ringfire/shard"
)

const ns = "default"

// settleMargin is what the ring may take beyond TTL + 1 s to settle after a
// membership change before a test fails: a loaded 2-core CI machine running
// the replicas under -race is slow, and the tests log the measured times
// rather than assert tight ones.
const settleMargin = 20 * time.Second

// jobSpec is load Job i: 1 or 2 pods running 1 to 3 seconds.
func jobSpec(prefix string, i int) *batch.Job {
	pods := int32(1 + i%2)
	duration := fmt.Sprintf("%ds", 1+i%3)
	job := vcjob.New(ns, fmt.Sprintf("%s-%03d", prefix, i), vcjob.Task("worker", pods, duration, ""))
	job.Spec.MinAvailable = pods
	return job
}

// load creates Jobs at a steady pace until stopped or max are created. A
// create that fails (the API server may be down) is retried until it
// succeeds or its deadline passes; AlreadyExists counts as success, since a
// create whose answer was lost may have landed.
type load struct {
	t       *testing.T
	s       *stack.Stack
	prefix  string
	started time.Time
	// stopPace ends the pacing of creates and waits for those under way.
	stopPace func()

	mu      sync.Mutex
	created []string
	pods    int // pods the created Jobs ask for
	retries int // failed create attempts that were retried
}

func startLoad(t *testing.T, s *stack.Stack, prefix string, max int, every time.Duration) *load {
	l := &load{t: t, s: s, prefix: prefix, started: time.Now()}
	l.stopPace = vcjob.Paced(every, max, 4, func(i int) { l.create(jobSpec(prefix, i)) })
	t.Cleanup(l.stop)
	return l
}

func (l *load) create(job *batch.Job) {
	retries, err := vcjob.CreateRetrying(l.s.Volcano, job, 90*time.Second)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.retries += retries
	if err != nil {
		l.t.Error(err)
		return
	}
	l.created = append(l.created, job.Name)
	l.pods += int(job.Spec.Tasks[0].Replicas)
}

// startUnderLoad starts a stack of three replicas on four nodes with the
// stand-in and a lease of ttl, watches its pod creations, and starts a load
// of 200 Jobs named prefix-NNN, one every 100 ms. It returns 3 s into the
// load, with Jobs being created and running.
func startUnderLoad(t *testing.T, prefix string, ttl time.Duration) (*stack.Stack, *podCreations, *load) {
	s := stack.Start(t, stack.Options{Replicas: 3, Nodes: 4, StandIn: true, LeaseTTL: ttl})
	pods := watchPodCreations(t, s)
	l := startLoad(t, s, prefix, 200, 100*time.Millisecond)
	time.Sleep(3 * time.Second) // Jobs being created and running
	return s, pods, l
}

// stop ends the pacing and waits for the creates under way.
func (l *load) stop() { l.stopPace() }

// finish stops the load, waits until every created Job has completed and
// checks the invariants: no pod created twice, every pod created once, no
// Job reconciled by two replicas at once.
func (l *load) finish(pods *podCreations, limit time.Duration) {
	l.t.Helper()
	l.stop()
	l.mu.Lock()
	created, want, retries := append([]string(nil), l.created...), l.pods, l.retries
	l.mu.Unlock()
	createdFor := time.Since(l.started)
	if stuck := waitCompletedIn(l.s, ns, created, limit); len(stuck) > 0 {
		for _, name := range stuck[:min(3, len(stuck))] {
			l.t.Errorf("job %s not Completed after %v:\n%s", name, limit, explainIn(l.s, ns, name))
		}
		l.t.Fatalf("%d of %d Jobs not Completed after %v: %v", len(stuck), len(created), limit, stuck[:min(20, len(stuck))])
	}
	completedAfter := time.Since(l.started)
	twice, total := pods.twice()
	if len(twice) > 0 {
		l.t.Errorf("%d pod names were created more than once, e.g. %v", len(twice), twice[:min(5, len(twice))])
	}
	if total != want {
		l.t.Errorf("%d pods created, want %d", total, want)
	}
	if bad := l.s.Runs.Overlaps(); len(bad) > 0 {
		l.t.Errorf("%d Jobs were reconciled by two replicas at once, e.g. %s", len(bad), bad[0])
	}
	if err := pods.err(); err != nil {
		l.t.Errorf("pod creation watch: %v", err)
	}
	l.t.Logf("load: %d Jobs created over %v (%d create attempts retried), all Completed %v after the first; %d pods created once each; %d reconciles, none overlapping",
		len(created), createdFor.Round(time.Millisecond), retries, completedAfter.Round(time.Millisecond), total, l.s.Runs.Count())
}

// podCreations counts the creations of each pod key in the control plane's
// etcd. It watches etcd rather than the API server so that it sees every
// creation in order and without gaps, across API server restarts.
type podCreations struct {
	mu     sync.Mutex
	counts map[string]int
	werr   error
}

func watchPodCreations(t *testing.T, s *stack.Stack) *podCreations {
	t.Helper()
	client, err := clientv3.New(clientv3.Config{
		Endpoints: []string{s.Cluster.EtcdEndpoint()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	prefix := "/registry/pods/" + ns + "/"
	resp, err := client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		cancel()
		client.Close()
		t.Fatalf("read the control plane's etcd: %v", err)
	}
	pc := &podCreations{counts: map[string]int{}}
	if resp.Count > 0 {
		pc.werr = fmt.Errorf("%d pods in %s before the test", resp.Count, ns)
	}
	done := make(chan struct{})
	wch := client.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	go func() {
		defer close(done)
		for wr := range wch {
			if err := wr.Err(); err != nil {
				if ctx.Err() == nil {
					pc.mu.Lock()
					pc.werr = err
					pc.mu.Unlock()
				}
				return
			}
			pc.mu.Lock()
			for _, ev := range wr.Events {
				if ev.IsCreate() {
					pc.counts[strings.TrimPrefix(string(ev.Kv.Key), prefix)]++
				}
			}
			pc.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done; client.Close() })
	return pc
}

// twice returns the pod names created more than once and the number of
// creations.
func (pc *podCreations) twice() (names []string, total int) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for name, n := range pc.counts {
		total += n
		if n > 1 {
			names = append(names, name)
		}
	}
	return names, total
}

func (pc *podCreations) err() error {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.werr
}

// settle waits until every running replica is a ready member that holds
// exactly the slots assigned to it and sees every other, as stack.WaitRing
// does, and returns how long that took. It fails the test after TTL + 1 s +
// settleMargin; past TTL + 1 s it logs, once, what is still missing.
func settle(t *testing.T, s *stack.Stack, ttl time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	due, limit := ttl+time.Second, ttl+time.Second+settleMargin
	logged := false
	for {
		lag := s.RingLag()
		if lag == "" {
			return time.Since(start)
		}
		waited := time.Since(start)
		if waited > limit {
			t.Fatalf("ring not settled within %v: %s", limit, lag)
		}
		if waited > due && !logged {
			t.Logf("ring not settled after TTL + 1 s (%v): %s\n%s", due, lag, stacksWith("shard.(*tenure).run"))
			logged = true
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stacksWith returns the stacks of this process's goroutines that contain
// fn: the replicas run in the test process, so a slow ring shows where its
// loop waits.
func stacksWith(fn string) string {
	var all bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&all, 2)
	var out []string
	for _, g := range strings.Split(all.String(), "\n\n") {
		if strings.Contains(g, fn) {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// waitCompletedIn waits until every named Job of namespace space is Completed, listing them all
// at once each round, and returns those that are not after limit.
func waitCompletedIn(s *stack.Stack, space string, names []string, limit time.Duration) (stuck []string) {
	deadline := time.Now().Add(limit)
	for {
		stuck = stuck[:0]
		list, err := s.Volcano.BatchV1alpha1().Jobs(space).List(context.Background(), metav1.ListOptions{})
		phase := map[string]batch.JobPhase{}
		if err == nil {
			for _, job := range list.Items {
				phase[job.Name] = job.Status.State.Phase
			}
		}
		for _, name := range names {
			if err != nil || phase[name] != batch.Completed {
				stuck = append(stuck, name)
			}
		}
		if len(stuck) == 0 || time.Now().After(deadline) {
			return stuck
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// explainIn tells what the API server and the owning replica know of a Job:
// for a Job that is stuck.
func explainIn(s *stack.Stack, space, name string) string {
	var b strings.Builder
	b.WriteString(s.Describe(space, name))
	ctx := context.Background()
	if pgs, err := s.Volcano.SchedulingV1beta1().PodGroups(space).List(ctx, metav1.ListOptions{}); err == nil {
		for _, pg := range pgs.Items {
			if strings.HasPrefix(pg.Name, name+"-") {
				fmt.Fprintf(&b, "API server: podgroup %s phase %s rv %s created %s\n", pg.Name, pg.Status.Phase, pg.ResourceVersion, pg.CreationTimestamp.Format(time.RFC3339))
			}
		}
	}
	key := space + "/" + name
	for _, id := range s.IDs() {
		r := s.Replica(id)
		if r == nil {
			continue
		}
		st := r.Manager.Status()
		slot := shard.SlotOf(key, r.Manager.Slots())
		if !slices.Contains(st.Held, slot) {
			continue
		}
		fmt.Fprintf(&b, "replica %s holds slot %d of %s\n", id, slot, key)
		info, err := r.Cache.JobInfo(key)
		switch {
		case err != nil:
			fmt.Fprintf(&b, "  cache: %v\n", err)
		case info == nil:
			b.WriteString("  cache: no such Job\n")
		default:
			fmt.Fprintf(&b, "  cache: job phase %s rv %s; %d task(s) with pods\n", info.Job.Status.State.Phase, info.Job.ResourceVersion, len(info.Pods))
			for _, pods := range info.Pods {
				for pn, p := range pods {
					fmt.Fprintf(&b, "  cache: pod %s phase %s rv %s stub %v\n", pn, p.Status.Phase, p.ResourceVersion, r.Cache.Owned(cache.Pods).IsStub(space+"/"+pn))
				}
			}
			for pn := range info.Foreign {
				fmt.Fprintf(&b, "  cache: foreign pod %s\n", pn)
			}
			if info.PodGroup != nil {
				fmt.Fprintf(&b, "  cache: podgroup %s phase %s rv %s\n", info.PodGroup.Name, info.PodGroup.Status.Phase, info.PodGroup.ResourceVersion)
			} else {
				b.WriteString("  cache: no podgroup\n")
			}
		}
	}
	return b.String()
}
