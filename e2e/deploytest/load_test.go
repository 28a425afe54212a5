package deploytest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// loadNS holds the load's Jobs.
const loadNS = "deploytest"

// jobSpec is load Job i: 1 or 2 pods running 1 to 3 seconds on the fake
// nodes (label type=kwok, as the harness and e2e/kind make them).
func (tg *target) jobSpec(i int) *batch.Job {
	pods := int32(1 + i%2)
	job := vcjob.New(loadNS, fmt.Sprintf("load-%04d", i), vcjob.Task("worker", pods, fmt.Sprintf("%ds", 1+i%3), ""))
	job.Spec.MinAvailable = pods
	spec := &job.Spec.Tasks[0].Template.Spec
	spec.NodeSelector = tg.kwokSelector
	// Where the fake nodes are tainted (e2e/kind), the load goes there still.
	spec.Tolerations = []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	return job
}

// load creates a Job every period until stopped, and follows every Job and
// pod of its namespace through the API server: which pod names were created
// more than once, and how long each Job waited for the controller at its two
// hand-offs (created, until its first pod exists; its last pod done, until
// it is Completed).
type load struct {
	t  *testing.T
	tg *target
	// stopPace ends the pacing of creates and waits for those under way.
	stopPace func()

	mu       sync.Mutex
	created  []string
	retries  int
	jobs     map[string]*jobTimes
	podUIDs  map[string]map[types.UID]bool
	podsDone map[string]map[string]time.Time // job -> pod -> when seen ended
}

type jobTimes struct {
	seen, firstPod, completed time.Time
}

func startLoad(t *testing.T, tg *target, period time.Duration, max int) *load {
	if _, err := tg.kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: loadNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	l := &load{t: t, tg: tg, jobs: map[string]*jobTimes{},
		podUIDs: map[string]map[types.UID]bool{}, podsDone: map[string]map[string]time.Time{}}
	stack.WatchJobs(t, tg.vc, loadNS, l.seeJob)
	stack.WatchPods(t, tg.kube, loadNS, l.seePod)
	l.stopPace = vcjob.Paced(period, max, 4, func(i int) { l.create(tg.jobSpec(i)) })
	t.Cleanup(l.stop)
	return l
}

// create makes a Job, retrying for up to 90 s.
func (l *load) create(job *batch.Job) {
	retries, err := vcjob.CreateRetrying(l.tg.vc, job, 90*time.Second)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.retries += retries
	if err != nil {
		l.t.Error(err)
		return
	}
	l.created = append(l.created, job.Name)
}

func (l *load) stop() { l.stopPace() }

func (l *load) seeJob(ev watch.EventType, job *batch.Job) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	jt := l.jobs[job.Name]
	if jt == nil {
		jt = &jobTimes{seen: now}
		l.jobs[job.Name] = jt
	}
	if job.Status.State.Phase == batch.Completed && jt.completed.IsZero() {
		jt.completed = now
	}
}

func (l *load) seePod(ev watch.EventType, pod *corev1.Pod) {
	now := time.Now()
	job := pod.Labels[batch.JobNameKey]
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.podUIDs[pod.Name] == nil {
		l.podUIDs[pod.Name] = map[types.UID]bool{}
	}
	l.podUIDs[pod.Name][pod.UID] = true
	if job == "" {
		return
	}
	jt := l.jobs[job]
	if jt == nil { // the pod's watch ran ahead of the Job's
		jt = &jobTimes{seen: now}
		l.jobs[job] = jt
	}
	if jt.firstPod.IsZero() {
		jt.firstPod = now
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		if l.podsDone[job] == nil {
			l.podsDone[job] = map[string]time.Time{}
		}
		if _, ok := l.podsDone[job][pod.Name]; !ok {
			l.podsDone[job][pod.Name] = now
		}
	}
}

// waitCompleted waits until every created Job is Completed and returns those
// that are not after limit.
func (l *load) waitCompleted(limit time.Duration) (stuck []string) {
	l.stop()
	deadline := time.Now().Add(limit)
	for {
		l.mu.Lock()
		stuck = stuck[:0]
		for _, name := range l.created {
			if jt := l.jobs[name]; jt == nil || jt.completed.IsZero() {
				stuck = append(stuck, name)
			}
		}
		l.mu.Unlock()
		if len(stuck) == 0 || time.Now().After(deadline) {
			return stuck
		}
		time.Sleep(time.Second)
	}
}

// twice lists the pod names created with more than one UID.
func (l *load) twice() (names []string, pods int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, uids := range l.podUIDs {
		if len(uids) > 1 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, len(l.podUIDs)
}

// pause is a wait of one Job for the controller.
type pause struct {
	job  string
	what string
	at   time.Time // when the wait began
	took time.Duration
}

// pauses returns every Job's two waits for the controller, longest first.
func (l *load) pauses() []pause {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []pause
	for name, jt := range l.jobs {
		if !jt.firstPod.IsZero() {
			out = append(out, pause{name, "created, until its first pod", jt.seen, jt.firstPod.Sub(jt.seen)})
		}
		if done := l.podsDone[name]; len(done) > 0 && !jt.completed.IsZero() {
			var last time.Time
			for _, at := range done {
				if at.After(last) {
					last = at
				}
			}
			out = append(out, pause{name, "its pods ended, until Completed", last, jt.completed.Sub(last)})
		}
	}
	slices.SortFunc(out, func(a, b pause) int { return int(b.took - a.took) })
	return out
}

func (l *load) createdCount() (int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.created), l.retries
}
