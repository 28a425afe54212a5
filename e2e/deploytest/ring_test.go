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
	"k8s.io/apimachinery/pkg/types"
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
	at       time.Time // when the round's reads began
	end      time.Time // when its answers were taken
	pods     []corev1.Pod
	statuses map[string]replicaStatus // by pod name
	errs     map[string]string        // why a running pod did not answer, by pod name
}

// ringWatch reads every ringfire pod's /status.json (through a port-forward
// of the Kubernetes API, with a reader's token: statusReader) every period,
// and keeps what the audit needs: the stretches a slot had no live holder,
// the slots two replicas held in two rounds in a row, and the latest view
// for the settle checks. It reaches the replicas through the Kubernetes API
// only, so it runs the same on any cluster.
//
// A round takes the answers that came within answerWait; a read still in
// flight (up to readTimeout: a replica that died, or a slow one) counts as no
// answer in that round and is not started again until it ends, its answer
// taken by a later round. So a replica that died slows no round, and a slow
// one is not read anew every round.
type ringWatch struct {
	kube   kubernetes.Interface
	status *statusReader
	ns     string
	period time.Duration
	cancel context.CancelFunc
	done   chan struct{}

	inflight map[types.UID]*statusRead // the watcher goroutine's only

	mu       sync.Mutex
	last     ringView
	rounds   int
	open     map[int]*openGap // slot -> its stretch without a live holder so far
	gaps     []gap            // the stretches that ended, longer than a round
	dropped  int              // stretches past maxGaps, not kept
	prevDup  map[int]string   // slots two replicas held in the previous round
	overlaps []string
}

const (
	answerWait  = 500 * time.Millisecond
	readTimeout = 2 * time.Second
)

// statusRead is one read of a pod's status, in flight until done is closed.
type statusRead struct {
	pod  string
	done chan struct{}
	st   replicaStatus
	err  error
}

// openGap is a stretch without a live holder still going on: the round that
// began it (its reads' start and end) and the last round that found none.
type openGap struct {
	from, fromEnd, lastAt time.Time
	why                   string
}

// gap is one stretch a slot had no live holder: took is from the first round
// that found none to the first that found one again, the most it can have
// been; lower, from the end of the first round's reads to the start of the
// last round that found none, the least. The audit judges lower.
type gap struct {
	slot  int
	from  time.Time
	took  time.Duration
	lower time.Duration
	why   string // each replica's view of the slot when the stretch began
}

func (g *openGap) upTo(slot int, at time.Time) gap {
	return gap{slot: slot, from: g.from, took: at.Sub(g.from), lower: max(g.lastAt.Sub(g.fromEnd), 0), why: g.why}
}

// maxGaps bounds what the watch keeps; a run has a few hundred stretches
// longer than a round. Any past it are counted (dropped) and fail the audit.
const maxGaps = 100000

const ringSelector = "app.kubernetes.io/name=ringfire"

func watchRing(kube kubernetes.Interface, status *statusReader, ns string, period time.Duration) *ringWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &ringWatch{kube: kube, status: status, ns: ns, period: period, cancel: cancel, done: make(chan struct{}),
		inflight: map[types.UID]*statusRead{}, open: map[int]*openGap{}, prevDup: map[int]string{}}
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

// read takes one round: the pods, then the status of each running pod, a
// read started for each that has none in flight, the answers that came
// within answerWait.
func (w *ringWatch) read(ctx context.Context) (ringView, error) {
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	pods, err := w.kube.CoreV1().Pods(w.ns).List(lctx, metav1.ListOptions{LabelSelector: ringSelector})
	cancel()
	if err != nil {
		return ringView{}, err
	}
	w.status.keep(pods.Items)
	v := ringView{at: time.Now(), pods: pods.Items, statuses: map[string]replicaStatus{}, errs: map[string]string{}}
	running := map[types.UID]bool{}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			continue
		}
		running[p.UID] = true
		if _, ok := w.inflight[p.UID]; ok {
			continue
		}
		r := &statusRead{pod: p.Name, done: make(chan struct{})}
		w.inflight[p.UID] = r
		go func() {
			defer close(r.done)
			sctx, cancel := context.WithTimeout(ctx, readTimeout)
			defer cancel()
			raw, err := w.status.get(sctx, &p)
			if err == nil {
				err = json.Unmarshal(raw, &r.st)
			}
			r.err = err
		}()
	}
	wctx, cancel := context.WithTimeout(ctx, answerWait)
	defer cancel()
	for uid, r := range w.inflight {
		if !running[uid] {
			delete(w.inflight, uid) // gone or no longer running: its read ends by itself
			continue
		}
		select {
		case <-r.done:
		case <-wctx.Done():
		}
	}
	for uid, r := range w.inflight {
		select {
		case <-r.done:
			delete(w.inflight, uid)
			if r.err != nil {
				v.errs[r.pod] = r.err.Error()
			} else {
				v.statuses[r.pod] = r.st
			}
		default:
			v.errs[r.pod] = fmt.Sprintf("no answer within %v (its read still in flight)", answerWait)
		}
	}
	v.end = time.Now()
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
	for s := range slots {
		g, isOpen := w.open[s]
		if len(holders[s]) > 0 {
			if isOpen {
				delete(w.open, s)
				switch ended := g.upTo(s, v.at); {
				case ended.lower <= 0: // one round without: nothing to judge
				case len(w.gaps) < maxGaps:
					w.gaps = append(w.gaps, ended)
				default:
					w.dropped++
				}
			}
			continue
		}
		if !isOpen {
			w.open[s] = &openGap{from: v.at, fromEnd: v.end, lastAt: v.at, why: v.why(s)}
			continue
		}
		g.lastAt = v.at
	}
}

// view returns the latest round.
func (w *ringWatch) view() ringView {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// longestGap returns the stretch without a live holder that began in
// [from, to) whose least length (lower) is the longest, counting stretches
// still open at the last round; ok is false when there was none. dropped
// counts the stretches the watch could not keep.
func (w *ringWatch) longestGap(from, to time.Time) (g gap, ok bool, dropped int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	consider := func(c gap) {
		if !c.from.Before(from) && c.from.Before(to) && (!ok || c.lower > g.lower) {
			g, ok = c, true
		}
	}
	for _, c := range w.gaps {
		consider(c)
	}
	for s, o := range w.open {
		consider(o.upTo(s, w.last.at))
	}
	return g, ok, w.dropped
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
