package deploytest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// replicaStatus is what the suite reads of a replica's /status.json.
type replicaStatus struct {
	ID       string
	Slots    int
	Members  []string
	Held     []int
	InDoubt  []int
	Assigned int
	Ready    bool
	// Holders and Assignment are the replica's view of who holds each slot
	// and who should: what a gap's story is told from (why).
	Holders    []string
	Assignment []string
}

// ringView is one round of the ring as the replicas report it: every
// ringfire pod that answered, and the pods there are.
type ringView struct {
	at       time.Time
	pods     []corev1.Pod
	statuses map[string]replicaStatus // by pod name
	errs     map[string]string        // why a running pod did not answer, by pod name
}

// ringWatch reads every ringfire pod's /status.json (through a port-forward
// of the Kubernetes API, with a reader's token: statusReader) every period,
// and keeps what the audit needs: the
// longest time a slot had no live holder, the slots two replicas held in two
// rounds in a row, and the latest view for the settle checks. It reaches the
// replicas through the Kubernetes API only, so it runs the same on any
// cluster.
type ringWatch struct {
	kube   kubernetes.Interface
	status *statusReader
	ns     string
	period time.Duration
	cancel context.CancelFunc
	done   chan struct{}

	// failing are the pods whose last read failed: the next waits for them
	// only briefly, so that a replica that died (a node lost) does not slow
	// every round to the full timeout and blur the others' answers.
	failing map[string]bool

	mu          sync.Mutex
	last        ringView
	rounds      int
	unownedFrom map[int]time.Time     // slot -> first round it had no live holder
	slowest     map[int]time.Duration // slot -> the longest round since it had none
	whyFrom     map[int]string        // slot -> the views when it began
	gaps        []gap                 // the stretches without a live holder that ended
	prevDup     map[int]string        // slots two replicas held in the previous round
	overlaps    []string
}

// gap is one stretch a slot had no live holder: from the first round that
// found none to the first that found one again. A round reads every replica
// at once and waits for the slowest (up to 2 s, or 0.5 s for one whose last
// read failed: a replica that died), so the stretch is measured only to
// within the longest round in it (slack).
type gap struct {
	slot  int
	from  time.Time
	took  time.Duration
	slack time.Duration
	why   string // each replica's view of the slot when the stretch began
}

// maxGaps bounds what the watch keeps: a run has a few hundred stretches.
const maxGaps = 100000

const ringSelector = "app.kubernetes.io/name=ringfire"

func watchRing(kube kubernetes.Interface, status *statusReader, ns string, period time.Duration) *ringWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &ringWatch{kube: kube, status: status, ns: ns, period: period, cancel: cancel, done: make(chan struct{}),
		failing: map[string]bool{}, unownedFrom: map[int]time.Time{}, slowest: map[int]time.Duration{}, whyFrom: map[int]string{}, prevDup: map[int]string{}}
	go func() {
		defer close(w.done)
		defer status.close()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			v, err := w.read(ctx)
			if err == nil {
				w.record(v)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *ringWatch) stop() { w.cancel(); <-w.done }

// read takes one round: the pods, then each running pod's status at once.
func (w *ringWatch) read(ctx context.Context) (ringView, error) {
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	pods, err := w.kube.CoreV1().Pods(w.ns).List(lctx, metav1.ListOptions{LabelSelector: ringSelector})
	cancel()
	if err != nil {
		return ringView{}, err
	}
	w.status.keep(pods.Items)
	v := ringView{at: time.Now(), pods: pods.Items, statuses: map[string]replicaStatus{}, errs: map[string]string{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			continue
		}
		timeout := 2 * time.Second
		if w.failing[p.Name] {
			timeout = 500 * time.Millisecond
		}
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			raw, err := w.status.get(sctx, &p)
			var st replicaStatus
			if err == nil {
				err = json.Unmarshal(raw, &st)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				v.errs[p.Name] = err.Error()
				return
			}
			v.statuses[p.Name] = st
		})
	}
	wg.Wait()
	clear(w.failing)
	for name := range v.errs {
		w.failing[name] = true
	}
	return v, nil
}

func (w *ringWatch) record(v ringView) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = v
	w.rounds++
	slots := 0
	holders := map[int][]string{}
	for name, st := range v.statuses {
		slots = max(slots, st.Slots)
		for _, s := range st.Held {
			holders[s] = append(holders[s], name)
		}
	}
	if slots == 0 {
		return // no replica answered: nothing to judge this round by
	}
	dup := map[int]string{}
	for s, hs := range holders {
		if len(hs) > 1 {
			sort.Strings(hs)
			dup[s] = strings.Join(hs, ",")
			// A handover between two replicas read a few milliseconds apart
			// can show a slot in both once; in two rounds in a row it is
			// held twice.
			if prev, ok := w.prevDup[s]; ok && prev == dup[s] && len(w.overlaps) < 20 {
				w.overlaps = append(w.overlaps, fmt.Sprintf("slot %d held by %s at %s", s, dup[s], v.at.Format("15:04:05.000")))
			}
		}
	}
	w.prevDup = dup
	round := time.Since(v.at)
	for s := range slots {
		if len(holders[s]) > 0 {
			if from, ok := w.unownedFrom[s]; ok {
				if len(w.gaps) < maxGaps {
					w.gaps = append(w.gaps, gap{slot: s, from: from, took: v.at.Sub(from), slack: max(w.slowest[s], round), why: w.whyFrom[s]})
				}
				delete(w.unownedFrom, s)
				delete(w.slowest, s)
				delete(w.whyFrom, s)
			}
			continue
		}
		if _, ok := w.unownedFrom[s]; !ok {
			w.unownedFrom[s] = v.at
			w.whyFrom[s] = v.why(s)
		}
		w.slowest[s] = max(w.slowest[s], round)
	}
}

// view returns the latest round.
func (w *ringWatch) view() ringView {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// longestGap returns the longest stretch without a live holder that began
// in [from, to), counting stretches still open at the last round; ok is
// false when there was none.
func (w *ringWatch) longestGap(from, to time.Time) (g gap, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	consider := func(c gap) {
		if !c.from.Before(from) && c.from.Before(to) && (!ok || c.took > g.took) {
			g, ok = c, true
		}
	}
	for _, c := range w.gaps {
		consider(c)
	}
	for s, start := range w.unownedFrom {
		consider(gap{slot: s, from: start, took: w.last.at.Sub(start), slack: w.slowest[s], why: w.whyFrom[s]})
	}
	return g, ok
}

func (w *ringWatch) heldTwice() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.overlaps)
}

// settledLag says what keeps the ring from being settled with the replicas
// named want, or "": each of them a Ready pod that answers, is a ready
// member, sees exactly want as members, holds what is assigned to it, and
// every slot is held once; no other ringfire pod runs.
func (v ringView) settledLag(want []string) string {
	var lag []string
	seen := map[string]bool{}
	for _, p := range v.pods {
		seen[p.Name] = true
		if !slices.Contains(want, p.Name) {
			lag = append(lag, p.Name+" still there")
			continue
		}
		if p.DeletionTimestamp != nil {
			lag = append(lag, p.Name+" terminating")
		}
	}
	held, slots := 0, 0
	for _, name := range want {
		if !seen[name] {
			lag = append(lag, name+" has no pod")
			continue
		}
		st, ok := v.statuses[name]
		switch {
		case !ok && v.errs[name] != "":
			lag = append(lag, name+" does not answer ("+v.errs[name]+")")
		case !ok:
			lag = append(lag, name+" does not answer")
		case !st.Ready:
			lag = append(lag, name+" not ready")
		case !slices.Equal(sorted(st.Members), want):
			lag = append(lag, fmt.Sprintf("%s sees members %v", name, st.Members))
		case len(st.Held) != st.Assigned:
			lag = append(lag, fmt.Sprintf("%s holds %d of its %d slots", name, len(st.Held), st.Assigned))
		}
		held += len(st.Held)
		slots = max(slots, st.Slots)
	}
	if len(lag) == 0 && held != slots {
		lag = append(lag, fmt.Sprintf("%d slots held in all, want %d", held, slots))
	}
	return strings.Join(lag, "; ")
}

// why tells how each replica saw slot in this round: in doubt (its lease
// unanswered), or the holder and assignee it knows of; and which did not
// answer.
func (v ringView) why(slot int) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(v.statuses)) {
		st := v.statuses[name]
		switch {
		case slices.Contains(st.InDoubt, slot):
			parts = append(parts, name+": its lease in doubt")
		case slot < len(st.Holders) && slot < len(st.Assignment):
			parts = append(parts, fmt.Sprintf("%s: held by %q, assigned to %q", name, st.Holders[slot], st.Assignment[slot]))
		default:
			parts = append(parts, name+": holders not known yet")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(v.errs)) {
		parts = append(parts, name+": no answer")
	}
	return strings.Join(parts, "; ")
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// replicaNames are the pods of a StatefulSet of n replicas named name.
func replicaNames(name string, n int) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = fmt.Sprintf("%s-%d", name, i)
	}
	return out
}
