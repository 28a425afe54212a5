package chaostest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/stack"
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
	return &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%03d", prefix, i), Namespace: ns},
		Spec: batch.JobSpec{SchedulerName: "volcano", MinAvailable: pods, Tasks: []batch.TaskSpec{{
			Name: "worker", Replicas: pods,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{cluster.PodDurationAnnotation: duration}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name: "main", Image: "example.invalid/batch:latest",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
						}},
					}},
				},
			},
		}}},
	}
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
	cancel  context.CancelFunc
	done    chan struct{}

	mu      sync.Mutex
	created []string
	pods    int // pods the created Jobs ask for
	retries int // failed create attempts that were retried
}

func startLoad(t *testing.T, s *stack.Stack, prefix string, max int, every time.Duration) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{t: t, s: s, prefix: prefix, started: time.Now(), cancel: cancel, done: make(chan struct{})}
	work := make(chan int)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range work {
				l.create(jobSpec(prefix, i))
			}
		})
	}
	go func() {
		defer close(l.done)
		defer wg.Wait()
		defer close(work)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := range max {
			select {
			case <-ctx.Done():
				return
			case work <- i:
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(l.stop)
	return l
}

func (l *load) create(job *batch.Job) {
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := l.s.Volcano.BatchV1alpha1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
		cancel()
		if err == nil || apierrors.IsAlreadyExists(err) {
			l.mu.Lock()
			l.created = append(l.created, job.Name)
			l.pods += int(job.Spec.Tasks[0].Replicas)
			l.mu.Unlock()
			return
		}
		if time.Now().After(deadline) {
			l.t.Errorf("create job %s: still failing after 90s: %v", job.Name, err)
			return
		}
		l.mu.Lock()
		l.retries++
		l.mu.Unlock()
		time.Sleep(200 * time.Millisecond)
	}
}

// stop ends the pacing and waits for the creates under way.
func (l *load) stop() {
	l.cancel()
	<-l.done
}

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
	deadline := time.Now().Add(limit)
	for _, name := range created {
		l.s.WaitPhase(ns, name, time.Until(deadline), batch.Completed)
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

// settle waits until every slot is held by its assigned member, failing the
// test after TTL + 1 s + settleMargin, and returns how long it took.
func settle(s *stack.Stack, ttl time.Duration) time.Duration {
	start := time.Now()
	s.WaitRing(ttl + time.Second + settleMargin)
	return time.Since(start)
}

// lockedBuffer collects log lines from many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
