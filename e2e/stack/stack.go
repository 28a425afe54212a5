// Package stack runs a whole ringfire stack for end-to-end tests: the local
// control plane with KWOK nodes and the Volcano CRDs, an etcd for the ring,
// ringfire replicas in the test process, and optionally a stand-in that
// admits PodGroups and binds pods where the gang scheduler is not under test.
package stack

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/deploy"
	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/standin"
	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/internal/replica"
	"github.com/ringfire/ringfire/internal/runlog"
	"github.com/ringfire/ringfire/shard"
)

// Slots is the slot count of a stack's ring.
const Slots = 256

// stackSeq numbers the stacks of this process, for their ring prefixes.
var stackSeq atomic.Int64

// Options configures a Stack.
type Options struct {
	Replicas int // started at once; default 1
	// NoReplicas starts none: the test starts them (StartReplica, then
	// WaitRing) once it has set the cluster up.
	NoReplicas bool
	Nodes      int           // KWOK nodes; default 4
	StandIn    bool          // admit PodGroups and bind pods without a scheduler
	Workers    int           // per replica; default 4
	MaxRequeue int           // per replica; 0 for 15
	LeaseTTL   time.Duration // default 2s
	// PodDuration is how long pods run unless annotated; default 1s.
	PodDuration time.Duration
	// NodeCPU, NodeMemory and NodePods size each KWOK node; defaults as
	// cluster.Options.
	NodeCPU, NodeMemory, NodePods string
	// BatchJobs runs the replicas' batch/v1 Job controller, and kube-scheduler
	// for those Jobs' pods.
	BatchJobs bool
	// WrapKube, if set, wraps each replica's API transport (id names the
	// replica): for tests that hold back or fail some of a replica's
	// requests.
	WrapKube func(id string, rt http.RoundTripper) http.RoundTripper
	// LogOutput, if set, receives the stack's and the replicas' log lines
	// besides the test log, for tests that check what a replica logged.
	LogOutput io.Writer
}

// Stack is a running ringfire stack.
type Stack struct {
	t       testing.TB
	opts    Options
	Cluster *cluster.Cluster
	Kube    kubernetes.Interface
	Volcano vcclient.Interface
	Ring    *localetcd.Server
	// Prefix is the ring's key prefix in Ring: one of the stack's own, so
	// that a client from elsewhere that reaches this etcd (a leaked one, or
	// one of another test process whose etcd had the port before) cannot
	// join this ring, nor this ring's replicas that one.
	Prefix string
	log    hclog.Logger

	ringOnce sync.Once
	ring     *clientv3.Client // ringClient's

	mu       sync.Mutex
	replicas map[string]*running
	// Runs records every Job reconcile of every replica.
	Runs *runlog.Log

	writes      writeLog
	replicaKube *rest.Config // as ringfire's ServiceAccount
}

type running struct {
	r      *replica.Replica
	client *clientv3.Client
	cancel context.CancelFunc
	done   chan struct{}
}

// Start brings a stack up for one test and tears it down when the test ends.
func Start(t testing.TB, opts Options) *Stack {
	t.Helper()
	if opts.Replicas == 0 {
		opts.Replicas = 1
	}
	if opts.Nodes == 0 {
		opts.Nodes = 4
	}
	if opts.Workers == 0 {
		opts.Workers = 4
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = 2 * time.Second
	}
	level := hclog.Warn
	if os.Getenv("RINGFIRE_E2E_DEBUG") != "" {
		level = hclog.Debug
	}
	var out io.Writer = testWriter{t}
	if opts.LogOutput != nil {
		out = io.MultiWriter(out, opts.LogOutput)
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "stack", Level: level, Output: out})
	cl := cluster.StartForTest(t, cluster.Options{
		Nodes: opts.Nodes, DefaultPodDuration: opts.PodDuration, Logger: log.Named("cluster"),
		NodeCPU: opts.NodeCPU, NodeMemory: opts.NodeMemory, NodePods: opts.NodePods,
		KubeScheduler: opts.BatchJobs,
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := crds.Install(ctx, cl.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	// The replicas run as a deployed one does: as ringfire's ServiceAccount, with only the
	// permissions of deploy/ringfire/10-rbac.yaml.
	if err := deploy.InstallRBAC(ctx, cl.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	replicaKube, err := deploy.ServiceAccountConfig(ctx, cl.RESTConfig(), 2*3600)
	if err != nil {
		t.Fatal(err)
	}
	s := &Stack{
		t: t, opts: opts, Cluster: cl, replicaKube: replicaKube, Kube: cl.Clientset(), Volcano: vcclient.NewForConfigOrDie(cl.RESTConfig()),
		Ring: localetcd.StartForTest(t), Prefix: fmt.Sprintf("/ringfire-%d-%d", os.Getpid(), stackSeq.Add(1)),
		log: log, replicas: map[string]*running{}, Runs: &runlog.Log{},
	}
	if opts.StandIn {
		done := make(chan struct{})
		go func() { defer close(done); standin.Run(ctx, s.Kube, s.Volcano, cl.NodeNames()) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	if !opts.NoReplicas {
		for i := range opts.Replicas {
			s.StartReplica(fmt.Sprintf("r%d", i))
		}
	}
	t.Cleanup(func() { writeUsed(t) }) // after the replicas have stopped: cleanups run last first
	t.Cleanup(s.stopAll)
	t.Cleanup(func() {
		refused := s.writes.refused()
		if len(refused) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		still, err := denied(ctx, kubernetes.NewForConfigOrDie(replicaKube), refused)
		switch {
		case err != nil:
			t.Errorf("the API server refused %d requests of the replicas; checking them: %v", len(refused), err)
		case len(still) > 0:
			t.Errorf("the API server refused requests of the replicas that deploy/ringfire/10-rbac.yaml does not allow: %v", still)
		default:
			t.Logf("the API server refused %d requests of the replicas while its RBAC caches were cold (just started); the role allows them all", len(refused))
		}
	})
	if !opts.NoReplicas {
		s.WaitRing(30 * time.Second)
	}
	return s
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// StartReplica starts a replica named id in this process.
func (s *Stack) StartReplica(id string) {
	s.t.Helper()
	s.StartReplicaVia(id, s.Ring.Endpoint())
}

// StartReplicaVia starts a replica named id that reaches the ring's etcd at endpoint: a
// fault proxy in front of s.Ring, for a partition of that replica alone.
func (s *Stack) StartReplicaVia(id, endpoint string) {
	s.t.Helper()
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		s.t.Fatal(err)
	}
	cfg := s.ReplicaConfig()
	if s.opts.WrapKube != nil {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return s.opts.WrapKube(id, rt) })
	}
	rcfg := replica.DefaultConfig()
	rcfg.ID, rcfg.Etcd, rcfg.Prefix, rcfg.Slots = id, client, s.Prefix, Slots
	rcfg.LeaseTTL, rcfg.DrainTimeout, rcfg.Kube = s.opts.LeaseTTL, 5*time.Second, cfg
	rcfg.Controllers = []string{replica.JobController, replica.QueueController, replica.PodGroupController, replica.CronJobController, replica.JobFlowController}
	if s.opts.BatchJobs {
		rcfg.Controllers = append(rcfg.Controllers, replica.BatchJobController)
	}
	rcfg.Workers, rcfg.Logger = s.opts.Workers, s.log.Named(id)
	if s.opts.MaxRequeue != 0 {
		rcfg.MaxRequeue = s.opts.MaxRequeue
	}
	rcfg.Observe = func(key string, start, end time.Time) {
		s.Runs.Add(runlog.Run{Key: key, Replica: id, Start: start, End: end})
	}
	r, err := replica.New(rcfg)
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rr := &running{r: r, client: client, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rr.done)
		if err := r.Run(ctx); err != nil {
			s.log.Error("replica stopped with an error", "id", id, "error", err)
		}
	}()
	s.mu.Lock()
	s.replicas[id] = rr
	s.mu.Unlock()
}

// ReplicaConfig is the API client configuration of the replicas: ringfire's ServiceAccount,
// 200 requests/s, and every request recorded as a replica's (writes, refusals, the permissions
// used).
func (s *Stack) ReplicaConfig() *rest.Config {
	cfg := rest.CopyConfig(s.replicaKube)
	cfg.QPS, cfg.Burst = 200, 400
	cfg.Wrap(s.writes.wrap)
	return cfg
}

// SchedulerConfig is ReplicaConfig for a gang scheduler a test runs beside the replicas
// (e2e/schedtest), whose permissions are recorded apart: they prove the scheduler's own role
// (deploy/components/gang-scheduler), which a replica without the scheduler is not bound to.
func (s *Stack) SchedulerConfig() *rest.Config {
	cfg := rest.CopyConfig(s.replicaKube)
	cfg.QPS, cfg.Burst = 200, 400
	cfg.Wrap(s.writes.wrapAs(true))
	return cfg
}

// StopReplica stops a replica gracefully: it hands its slots over and leaves.
func (s *Stack) StopReplica(id string) {
	rr := s.take(id)
	rr.cancel()
	s.wait(id, rr)
	rr.client.Close()
}

// KillReplica stops a replica as kill -9 would: its etcd connection drops
// first, its lease is never revoked, its work is cut short.
func (s *Stack) KillReplica(id string) {
	rr := s.take(id)
	rr.client.Close()
	rr.cancel()
	s.wait(id, rr)
}

// IDs returns the ids of the running replicas, sorted.
func (s *Stack) IDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idsLocked()
}

// idsLocked is IDs for a caller that holds s.mu.
func (s *Stack) idsLocked() []string {
	ids := make([]string, 0, len(s.replicas))
	for id := range s.replicas {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Ready is the running replica's own readiness (what its /readyz serves):
// nil, or why it is not ready.
func (s *Stack) Ready(id string) error {
	rr := s.lookup(id)
	if rr == nil {
		return fmt.Errorf("no replica %s", id)
	}
	return rr.r.Ready()
}

// Replica returns the running replica id, or nil: for tests that look
// inside it (its ring status, its cache) when they explain a failure.
func (s *Stack) Replica(id string) *replica.Replica {
	if rr := s.lookup(id); rr != nil {
		return rr.r
	}
	return nil
}

// lookup returns the running replica id, or nil.
func (s *Stack) lookup(id string) *running {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replicas[id]
}

// Running reports whether the replica is started and its Run has not
// returned.
func (s *Stack) Running(id string) bool {
	rr := s.lookup(id)
	if rr == nil {
		return false
	}
	select {
	case <-rr.done:
		return false
	default:
		return true
	}
}

func (s *Stack) take(id string) *running {
	s.mu.Lock()
	defer s.mu.Unlock()
	rr := s.replicas[id]
	if rr == nil {
		s.t.Fatalf("no replica %s", id)
	}
	delete(s.replicas, id)
	return rr
}

func (s *Stack) wait(id string, rr *running) {
	select {
	case <-rr.done:
	case <-time.After(30 * time.Second):
		s.t.Errorf("replica %s did not stop within 30s", id)
	}
}

func (s *Stack) stopAll() {
	s.mu.Lock()
	ids := make([]string, 0, len(s.replicas))
	for id := range s.replicas {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.StopReplica(id)
	}
}

// WaitRing waits until every running replica is ready and every slot is
// held by the member the assignment gives it to. Failing, it says what was
// missing and what the ring's etcd holds.
func (s *Stack) WaitRing(limit time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		lag := s.RingLag()
		if lag == "" {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("ring not settled within %v: %s\n%s\n%s", limit, lag, s.ringKeys(), portUsers(s.Ring.Endpoint()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// RingLag says what keeps the ring from being settled (every running
// replica a ready member that sees all the others and holds exactly the
// slots assigned to it, every slot held), or "" when it is.
func (s *Stack) RingLag() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.idsLocked()
	var lag []string
	held := 0
	for _, id := range ids {
		m := s.replicas[id].r.Manager
		st := m.Status()
		held += len(st.Held)
		switch {
		case !m.Ready():
			lag = append(lag, fmt.Sprintf("%s not a ready member (lease: %v)", id, m.Valid()))
		case !slices.Equal(slices.Sorted(slices.Values(st.Members)), ids):
			lag = append(lag, fmt.Sprintf("%s sees members %v, want %v", id, st.Members, ids))
		case len(st.Held) != st.Assigned:
			lag = append(lag, fmt.Sprintf("%s holds %d slots (%d in doubt) of the %d assigned to it", id, len(st.Held), len(st.InDoubt), st.Assigned))
		}
	}
	if len(lag) == 0 && held != Slots {
		lag = append(lag, fmt.Sprintf("%d slots held in all, want %d", held, Slots))
	}
	return strings.Join(lag, "; ")
}

// ringKeys lists what the ring's etcd holds, for a failure message: the
// member keys with their values, and how many slot keys each prefix has.
// A prefix not the stack's own is a client from elsewhere.
func (s *Stack) ringKeys() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := s.ringClient().Get(ctx, "", clientv3.WithFromKey(), clientv3.WithLimit(2000))
	if err != nil {
		return fmt.Sprintf("the ring's etcd: %v", err)
	}
	lines := []string{fmt.Sprintf("the ring's etcd (%s, this stack's prefix %s) holds %d keys:", s.Ring.Endpoint(), s.Prefix, resp.Count)}
	slotKeys := map[string]int{}
	for _, kv := range resp.Kvs {
		key := string(kv.Key)
		if i := strings.Index(key, "/slots/"); i >= 0 {
			slotKeys[key[:i]]++
			continue
		}
		lines = append(lines, fmt.Sprintf("  %s = %.200s (lease %x)", key, kv.Value, kv.Lease))
	}
	for _, prefix := range slices.Sorted(maps.Keys(slotKeys)) {
		lines = append(lines, fmt.Sprintf("  %s/slots/: %d keys", prefix, slotKeys[prefix]))
	}
	return strings.Join(lines, "\n")
}

// WaitPhase waits until the Job reaches one of phases and returns it.
func (s *Stack) WaitPhase(ns, name string, limit time.Duration, phases ...batch.JobPhase) *batch.Job {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	var last *batch.Job
	for {
		job, err := s.Volcano.BatchV1alpha1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			last = job
			for _, p := range phases {
				if job.Status.State.Phase == p {
					return job
				}
			}
		}
		if time.Now().After(deadline) {
			phase := batch.JobPhase("<none>")
			if last != nil {
				phase = last.Status.State.Phase
			}
			s.t.Fatalf("job %s/%s: phase %s after %v, want one of %v\n%s", ns, name, phase, limit, phases, s.Describe(ns, name))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Describe summarizes a Job, its pods and its events, for failure messages.
func (s *Stack) Describe(ns, name string) string {
	ctx := context.Background()
	var b strings.Builder
	if job, err := s.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
		fmt.Fprintf(&b, "status: %+v\n", job.Status)
	}
	pods, _ := s.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batch.JobNameKey + "=" + name})
	if pods != nil {
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "pod %s: %s node=%q deleting=%v\n", p.Name, p.Status.Phase, p.Spec.NodeName, p.DeletionTimestamp != nil)
		}
	}
	if pgs, err := s.Volcano.SchedulingV1beta1().PodGroups(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, pg := range pgs.Items {
			if ref := metav1.GetControllerOf(&pg); ref != nil && ref.Name == name {
				fmt.Fprintf(&b, "podgroup %s: phase %q uid %s slot %q\n", pg.Name, pg.Status.Phase, pg.UID, pg.Labels[shard.SlotLabel])
			}
		}
	}
	// Each replica's view of the Job's slot, and who reconciled it last: a Job that stopped
	// moving is told apart as unowned, owned and never listed, or owned and not looked at.
	key := ns + "/" + name
	slot := shard.SlotOf(key, Slots)
	for _, id := range s.IDs() {
		r := s.Replica(id)
		if r == nil {
			continue
		}
		_, held := r.Manager.SlotContext(slot)
		fmt.Fprintf(&b, "replica %s: slot %d held %v, listed %v\n", id, slot, held, r.Cache.Listed(key, Slots))
	}
	if runs := s.Runs.Of(key, 8); len(runs) > 0 {
		fmt.Fprintf(&b, "last reconciles: %s\n", strings.Join(runs, ", "))
	} else {
		fmt.Fprintf(&b, "never reconciled\n")
	}
	events, _ := s.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if events != nil {
		sort.Slice(events.Items, func(i, j int) bool { return events.Items[i].LastTimestamp.Before(&events.Items[j].LastTimestamp) })
		for _, e := range events.Items {
			fmt.Fprintf(&b, "event %s %s: %s\n", e.Type, e.Reason, e.Message)
		}
	}
	return b.String()
}

// Events returns the messages of the Job's events with the given reason,
// each as many times as it happened (the recorder folds repeats into one
// Event with a count).
func (s *Stack) Events(ns, name, reason string) []string { return Events(s.Kube, ns, name, reason) }

// Events returns the messages of the Events of ns's object name with the
// given reason, each as many times as it happened (the recorder folds
// repeats into one Event with a count); nil if they cannot be listed.
func Events(kube kubernetes.Interface, ns, name, reason string) []string {
	events, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range events.Items {
		if e.Reason == reason {
			for range max(e.Count, 1) {
				out = append(out, e.Message)
			}
		}
	}
	return out
}

// Pods returns the Job's pods.
func (s *Stack) Pods(ns, name string) []corev1.Pod {
	pods, err := s.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: batch.JobNameKey + "=" + name})
	if err != nil {
		s.t.Fatal(err)
	}
	return pods.Items
}

// WatchPods calls see with every pod of the namespace as it stands now,
// then with every change the API server reports, in order and without gaps,
// until the test ends.
func (s *Stack) WatchPods(ns string, see func(watch.EventType, *corev1.Pod)) {
	s.t.Helper()
	WatchPods(s.t, s.Kube, ns, see)
}

// WatchPods is Stack.WatchPods for a test that has a cluster but no Stack
// (replicas as processes, say).
func WatchPods(t testing.TB, kube kubernetes.Interface, ns string, see func(watch.EventType, *corev1.Pod)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		see(watch.Added, &list.Items[i])
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &toolscache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return kube.CoreV1().Pods(ns).Watch(ctx, o)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range w.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok {
				see(ev.Type, pod)
			}
		}
	}()
	t.Cleanup(w.Stop)
}

// WatchJobs calls see with every Volcano Job of the namespace as it stands now, then with
// every change the API server reports, in order and without gaps, until the test ends.
func (s *Stack) WatchJobs(ns string, see func(watch.EventType, *batch.Job)) {
	s.t.Helper()
	WatchJobs(s.t, s.Volcano, ns, see)
}

// WatchJobs is Stack.WatchJobs for a test that has a cluster but no Stack.
func WatchJobs(t testing.TB, vc vcclient.Interface, ns string, see func(watch.EventType, *batch.Job)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	jobs := vc.BatchV1alpha1().Jobs(ns)
	list, err := jobs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		see(watch.Added, &list.Items[i])
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &toolscache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return jobs.Watch(ctx, o) },
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range w.ResultChan() {
			if job, ok := ev.Object.(*batch.Job); ok {
				see(ev.Type, job)
			}
		}
	}()
	t.Cleanup(w.Stop)
}

// NamesHeldBy returns n names "<prefix>-<i>", i = 0, 1, ..., whose keys in namespace ns fall
// on slots the replica id holds (SlotHolder), trying at most 10,000; the test fails if fewer
// are found.
func (s *Stack) NamesHeldBy(id, ns, prefix string, n int) []string {
	s.t.Helper()
	var names []string
	for i := 0; len(names) < n && i < 10_000; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if s.SlotHolder(ns+"/"+name) == id {
			names = append(names, name)
		}
	}
	if len(names) < n {
		s.t.Fatalf("found only %d of %d names on %s's slots", len(names), n, id)
	}
	return names
}

// SlotHolder returns the id of the replica that holds the slot of key, from the ring's etcd;
// "" when no one holds it.
func (s *Stack) SlotHolder(key string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := s.ringClient().Get(ctx, fmt.Sprintf("%s%d", shard.SlotsPrefix(s.Prefix), shard.SlotOf(key, Slots)))
	if err != nil {
		s.t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// ringClient is the stack's own client of the ring's etcd, made at first use
// (NamesHeldBy asks SlotHolder up to thousands of times) and closed when the
// test ends.
func (s *Stack) ringClient() *clientv3.Client {
	s.ringOnce.Do(func() { s.ring = localetcd.ClientForTest(s.t, s.Ring.Endpoint()) })
	return s.ring
}
