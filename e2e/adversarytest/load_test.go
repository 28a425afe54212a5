package adversarytest

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
	"github.com/ringfire/ringfire/shard"
)

// The steady load of another namespace, which no attack touches: a Job of
// loadPods pods every loadPeriod, from the world's start to the end of the
// probe. Its p99 of create → all pods created is measured against loadP99,
// issue 49's target, which does not hold yet on the 2-core CI machine while the
// attacks' objects are made (p99 12–27 s, in their first 30 s): the bound fails
// the test only with loadEnv=1, and is logged otherwise.
const loadEnv = "RINGFIRE_ADVERSARY_LOAD"

const (
	loadPeriod = time.Second
	loadPods   = 2
	loadP99    = 2 * time.Second
	// loadSettle bounds how long the last Jobs of the load may take once it
	// stops: any that has not all its pods by then counts as that slow.
	loadSettle = 30 * time.Second
	// loadMax bounds the Jobs of the load: 20 minutes of it, far more than
	// a world lasts.
	loadMax = 1200
)

// load is the steady load of a world and what it measured.
type load struct {
	w     *world
	ns    string
	stop  func()
	began time.Time

	mu       sync.Mutex
	created  map[string]time.Time       // Job → just before its create was sent
	answered map[string]time.Time       // Job → when the API server answered its create
	grouped  map[string]time.Time       // Job → when its PodGroup was seen
	admitted map[string]time.Time       // Job → when its PodGroup was seen admitted
	pods     map[string]map[string]bool // Job → its pods seen
	done     map[string]time.Time       // Job → when its last pod was seen
	failed   []string                   // creates that failed
}

// startLoad starts the load in a namespace of its own, made by the admin.
func startLoad(t *testing.T, w *world) *load {
	t.Helper()
	l := &load{w: w, ns: vcjob.Namespace(t, w.kube, "load"), began: time.Now(), created: map[string]time.Time{},
		answered: map[string]time.Time{}, grouped: map[string]time.Time{}, admitted: map[string]time.Time{},
		pods: map[string]map[string]bool{}, done: map[string]time.Time{}}
	stack.WatchPods(t, w.kube, l.ns, func(ev watch.EventType, pod *corev1.Pod) {
		if ev != watch.Added {
			return
		}
		at := time.Now()
		job := pod.Labels[batch.JobNameKey]
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.pods[job] == nil {
			l.pods[job] = map[string]bool{}
		}
		l.pods[job][pod.Name] = true
		if len(l.pods[job]) == loadPods {
			l.done[job] = at
		}
	})
	watchPodGroups(t, w.volcano, l.ns, func(pg *scheduling.PodGroup) {
		ref := metav1.GetControllerOf(pg)
		if ref == nil {
			return
		}
		at := time.Now()
		l.mu.Lock()
		defer l.mu.Unlock()
		if _, ok := l.grouped[ref.Name]; !ok {
			l.grouped[ref.Name] = at
		}
		if _, ok := l.admitted[ref.Name]; !ok && pg.Status.Phase != "" && pg.Status.Phase != scheduling.PodGroupPending {
			l.admitted[ref.Name] = at
		}
	})
	l.stop = vcjob.Paced(loadPeriod, loadMax, 4, func(i int) {
		name := fmt.Sprintf("load-%d", i)
		job := vcjob.New(l.ns, name, vcjob.Task("worker", loadPods, "1s", ""))
		l.mu.Lock()
		l.created[name] = time.Now()
		l.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := w.volcano.BatchV1alpha1().Jobs(l.ns).Create(ctx, job, metav1.CreateOptions{})
		l.mu.Lock()
		defer l.mu.Unlock()
		if err != nil {
			delete(l.created, name)
			l.failed = append(l.failed, fmt.Sprintf("%s: %v", name, err))
			return
		}
		l.answered[name] = time.Now()
	})
	t.Cleanup(l.stop)
	w.mu.Lock()
	w.loadFrom = l.began
	w.mu.Unlock()
	return l
}

// report stops the load, waits for its last Jobs' pods, and checks the p99
// of create → all pods created. A Job whose slot was held by a replica
// killed on purpose while it waited is left out of the p99 and reported
// apart: it measures the failover (bounded by docs/design.md's invariant 2),
// not the attacks.
func (l *load) report(t *testing.T) {
	l.stop()
	deadline := time.Now().Add(loadSettle)
	for time.Now().Before(deadline) && l.missing() > 0 {
		time.Sleep(100 * time.Millisecond)
	}
	if n := l.missing(); n > 0 {
		t.Errorf("%d Jobs of the load still lack pods %v after it stopped; each counts as that slow", n, loadSettle)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.mu.Lock()
	kills := slices.Clone(l.w.kills)
	l.w.mu.Unlock()
	var lat, failover []time.Duration
	windows := map[int][]time.Duration{}
	stages := map[int][4][]time.Duration{} // create → answered → PodGroup → admitted → pods, by window
	for name, at := range l.created {
		end, ok := l.done[name]
		if !ok {
			end = time.Now()
		}
		d := end.Sub(at)
		win := int(at.Sub(l.began) / loadWindow)
		windows[win] = append(windows[win], d)
		if c, g, a := l.answered[name], l.grouped[name], l.admitted[name]; !c.IsZero() && !g.IsZero() && !a.IsZero() && ok {
			s := stages[win]
			s[0], s[1] = append(s[0], c.Sub(at)), append(s[1], g.Sub(c))
			s[2], s[3] = append(s[2], a.Sub(g)), append(s[3], end.Sub(a))
			stages[win] = s
		}
		if waitedOutKill(kills, shard.SlotOf(l.ns+"/"+name, slots), at, end) {
			failover = append(failover, d)
			continue
		}
		lat = append(lat, d)
	}
	if len(l.failed) > 0 {
		t.Errorf("%d creates of the load failed: %v", len(l.failed), l.failed[:min(5, len(l.failed))])
	}
	if len(lat) == 0 {
		t.Fatal("the load made no Job")
	}
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[int(math.Ceil(q*float64(len(lat))))-1] }
	t.Logf("load: %d Jobs of %d pods, create → all pods created: p50 %v, p99 %v, max %v",
		len(lat), loadPods, p(0.5).Round(time.Millisecond), p(0.99).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	if len(failover) > 0 {
		t.Logf("load: %d more Jobs waited out the deliberate kill of their slot's holder, the slowest %v",
			len(failover), slices.Max(failover).Round(time.Millisecond))
	}
	t.Logf("load, by %v of creates since it began (Jobs: p50 max): %s", loadWindow, timeline(windows))
	t.Logf("load, the medians of its stages by %v (create → answered by the API server / → PodGroup seen / → admitted / → pods): %s", loadWindow, stageline(stages))
	if got := p(0.99); got > loadP99 {
		if os.Getenv(loadEnv) == "1" {
			t.Errorf("the load's p99 of create → all pods created is %v, above %v", got.Round(time.Millisecond), loadP99)
		} else {
			t.Logf("the load's p99 of create → all pods created is %v, above the target of %v (not asserted; %s=1 asserts it)",
				got.Round(time.Millisecond), loadP99, loadEnv)
		}
	}
}

// missing counts the Jobs of the load made whose pods are not all seen.
func (l *load) missing() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for name := range l.created {
		if _, ok := l.done[name]; !ok {
			n++
		}
	}
	return n
}

// loadWindow is the span of creates each entry of the load's timeline
// covers.
const loadWindow = 15 * time.Second

// timeline writes the load's latencies by window of creates, in order.
func timeline(windows map[int][]time.Duration) string {
	var keys []int
	for k := range windows {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		ds := windows[k]
		slices.Sort(ds)
		fmt.Fprintf(&b, "[%ds: %d: %v %v] ", k*int(loadWindow/time.Second), len(ds),
			ds[len(ds)/2].Round(10*time.Millisecond), ds[len(ds)-1].Round(10*time.Millisecond))
	}
	return b.String()
}

// stageline writes the medians of the load's stages by window, in order.
func stageline(stages map[int][4][]time.Duration) string {
	var keys []int
	for k := range stages {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "[%ds:", k*int(loadWindow/time.Second))
		for _, ds := range stages[k] {
			slices.Sort(ds)
			fmt.Fprintf(&b, " %v", ds[len(ds)/2].Round(10*time.Millisecond))
		}
		b.WriteString("] ")
	}
	return b.String()
}

// waitedOutKill reports whether a Job of slot that waited from start to
// end overlapped a deliberate kill of the slot's holder, up to the ring
// settling after its restart.
func waitedOutKill(kills []kill, slot int, start, end time.Time) bool {
	for _, k := range kills {
		back := k.back
		if back.IsZero() {
			back = end
		}
		if k.held[slot] && start.Before(back) && end.After(k.at) {
			return true
		}
	}
	return false
}
