package core

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Inter-pod affinity in a cycle, as Volcano's predicates and nodeorder
// plugins apply kube-scheduler's: where the pods are, as the terms of the
// pending pods and of the pods on the nodes count them, kept up to date as
// the cycle places pods and undoes placements, so that a gang's later
// members see its earlier ones (affinityfit.go checks and scores nodes
// with it). Counts are kept per topology domain: a term counts the pods it
// selects, a held term its holders. A cycle without any pod
// (anti-)affinity term has no interPod and pays nothing for it.

// interPod is the cycle's inter-pod affinity state.
type interPod struct {
	nodes      *nodeSet
	nodeAt     map[string]int
	namespaces map[string]map[string]string
	nsCache    map[string]labels.Set

	termIDs map[string]*podTerm

	counters   []*termCounter
	counterIDs map[string]int32
	counterIx  termIndex

	held    []*heldTerm
	heldIDs map[string]int32
	heldIx  termIndex

	classIDs map[string]int32 // see class; 0 is no class
	key      strings.Builder
	buf      []int32

	topologies map[string]*topology // by key

	// Node choice (affinityfit.go): the scores of the task being placed,
	// and a group's room per domain.
	room      []int64
	nodeScore []int64
	scored    []bool
	touched   []int32
}

// topology divides the nodes into the domains of one topology key: the
// nodes with the same value of the label. Counts are kept per domain.
type topology struct {
	of    []int32   // node → its domain, -1 without the label
	nodes [][]int32 // domain → its nodes
}

// termCounter counts, per domain of each of its terms' topology keys, the
// pods on the nodes that match all of its terms: one term of a pending
// pod's anti-affinity or preferred terms, or all of its required affinity
// terms together, as kube-scheduler counts them. Pods on nodes without
// the label do not count.
type termCounter struct {
	terms  []*podTerm
	topos  []*topology
	counts []map[int32]int32 // per term: domain → pods
	total  int32             // all counts: 0 when no pod counts anywhere
}

// heldTerm is a term the pods on the nodes hold against the pods to come:
// a required anti-affinity term (weight 0), or a preferred term (its
// weight, negative for anti-affinity). holders counts its holders per
// domain of its topology key.
type heldTerm struct {
	term    *podTerm
	topo    *topology
	weight  int32
	holders map[int32]int32
	total   int32
}

// taskAffinity is a pending pod's part in inter-pod affinity; a task
// without one (nil) is neither steered by any term nor counted by one.
type taskAffinity struct {
	// Its own terms.
	required  int32      // counter of its required affinity terms, -1 without
	selfMatch bool       // it matches all of its required affinity terms
	anti      []int32    // counters of its required anti-affinity terms
	preferred []weighted // counters of its preferred terms, weighted
	holds     []int32    // the held terms it brings to its node
	// Others' terms.
	counted  []int32 // the counters that count it once placed
	heldAnti []int32 // held required anti-affinity terms that select it
	heldPref []int32 // held preferred terms that select it
}

type weighted struct{ id, weight int32 }

// newInterPod returns the cycle's inter-pod affinity state, or nil when no
// pod of the snapshot, placed or pending, has a pod (anti-)affinity term.
func newInterPod(snap *Snapshot, nodes *nodeSet) *interPod {
	if !anyPodAffinity(snap) {
		return nil
	}
	p := &interPod{
		nodes: nodes, nodeAt: make(map[string]int, len(nodes.nodes)), namespaces: snap.Namespaces,
		nsCache: map[string]labels.Set{}, termIDs: map[string]*podTerm{},
		counterIDs: map[string]int32{}, heldIDs: map[string]int32{}, classIDs: map[string]int32{},
		topologies: map[string]*topology{},
	}
	for i, n := range nodes.nodes {
		p.nodeAt[n.Name] = i
	}
	return p
}

func anyPodAffinity(snap *Snapshot) bool {
	for i := range snap.Pods {
		if HasPodAffinity(snap.Pods[i].PodAffinity, snap.Pods[i].PodAntiAffinity) {
			return true
		}
	}
	for i := range snap.Jobs {
		for k := range snap.Jobs[i].Pending {
			if t := &snap.Jobs[i].Pending[k]; HasPodAffinity(t.PodAffinity, t.PodAntiAffinity) {
				return true
			}
		}
	}
	return false
}

func (p *interPod) nsLabels(ns string) labels.Set {
	l, ok := p.nsCache[ns]
	if !ok {
		l = namespaceLabels(p.namespaces, ns)
		p.nsCache[ns] = l
	}
	return l
}

// addTask registers a pending pod's own terms: it returns nil for a pod
// without any (join may still give it a part).
func (p *interPod) addTask(t *Task, ns string) *taskAffinity {
	if !HasPodAffinity(t.PodAffinity, t.PodAntiAffinity) {
		return nil
	}
	a := &taskAffinity{required: -1}
	if pa := t.PodAffinity; pa != nil {
		if req := pa.RequiredDuringSchedulingIgnoredDuringExecution; len(req) > 0 {
			a.required = p.counter(ns, t.Labels, req)
			a.selfMatch = p.counters[a.required].matches(ns, p.nsLabels(ns), t.Labels)
		}
		for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
			w := &pa.PreferredDuringSchedulingIgnoredDuringExecution[i]
			if w.Weight != 0 {
				a.preferred = append(a.preferred, weighted{p.counter(ns, t.Labels, []corev1.PodAffinityTerm{w.PodAffinityTerm}), w.Weight})
			}
		}
	}
	if anti := t.PodAntiAffinity; anti != nil {
		for i := range anti.RequiredDuringSchedulingIgnoredDuringExecution {
			a.anti = append(a.anti, p.counter(ns, t.Labels, anti.RequiredDuringSchedulingIgnoredDuringExecution[i:i+1]))
		}
		for i := range anti.PreferredDuringSchedulingIgnoredDuringExecution {
			w := &anti.PreferredDuringSchedulingIgnoredDuringExecution[i]
			if w.Weight != 0 {
				a.preferred = append(a.preferred, weighted{p.counter(ns, t.Labels, []corev1.PodAffinityTerm{w.PodAffinityTerm}), -w.Weight})
			}
		}
	}
	a.holds = p.holdTerms(ns, t.Labels, t.PodAffinity, t.PodAntiAffinity)
	return a
}

// placeSnapshotPods counts the pods on the nodes and the terms they hold.
// Every pending pod's own terms must be registered (addTask) before.
func (p *interPod) placeSnapshotPods(pods []PlacedPod) {
	for i := range pods {
		pod := &pods[i]
		node, ok := p.nodeAt[pod.Node]
		if !ok {
			continue // a node the snapshot leaves out holds nothing either
		}
		p.buf = p.matchCounters(pod.Namespace, pod.Labels, p.buf[:0])
		for _, id := range p.buf {
			p.counters[id].add(node, 1)
		}
		if HasPodAffinity(pod.PodAffinity, pod.PodAntiAffinity) {
			for _, id := range p.holdTerms(pod.Namespace, pod.Labels, pod.PodAffinity, pod.PodAntiAffinity) {
				p.held[id].add(node, 1)
			}
		}
	}
}

// join finds the terms of others that count or select a pending pod, once
// every term of the cycle is registered. It returns the pod's part (a, or
// a new one), or nil when it has none.
func (p *interPod) join(t *Task, ns string, a *taskAffinity) *taskAffinity {
	counted := p.matchCounters(ns, t.Labels, p.buf[:0])
	p.buf = counted
	var heldAnti, heldPref []int32
	if len(p.held) > 0 {
		nsLabels := p.nsLabels(ns)
		for _, id := range p.heldIx.candidates(t.Labels, counted[len(counted):]) {
			h := p.held[id]
			if !h.term.matches(ns, nsLabels, t.Labels) {
				continue
			}
			if h.weight == 0 {
				heldAnti = append(heldAnti, id)
			} else {
				heldPref = append(heldPref, id)
			}
		}
	}
	if a == nil {
		if len(counted) == 0 && len(heldAnti) == 0 && len(heldPref) == 0 {
			return nil
		}
		a = &taskAffinity{required: -1}
	}
	a.counted = slices.Clone(counted)
	slices.Sort(a.counted)
	slices.Sort(heldAnti)
	slices.Sort(heldPref)
	a.heldAnti, a.heldPref = heldAnti, heldPref
	return a
}

// matchCounters appends to buf the counters that count a pod of namespace
// ns with podLabels.
func (p *interPod) matchCounters(ns string, podLabels map[string]string, buf []int32) []int32 {
	start := len(buf)
	buf = p.counterIx.candidates(podLabels, buf)
	if len(buf) == start {
		return buf
	}
	nsLabels := p.nsLabels(ns)
	kept := buf[:start]
	for _, id := range buf[start:] {
		if p.counters[id].matches(ns, nsLabels, podLabels) {
			kept = append(kept, id)
		}
	}
	return kept
}

// class names what in a task's inter-pod affinity decides which nodes can
// take it (its required terms, and the held anti-affinity terms that select
// it), so that tasks of one shape are interchangeable; 0 for none. dynamic
// says that the nodes that can take it change as pods of its own shape are
// placed, which voids the cycle's capacity bounds for it.
func (p *interPod) class(a *taskAffinity) (id int32, dynamic bool) {
	if a == nil || (a.required < 0 && len(a.anti) == 0 && len(a.heldAnti) == 0) {
		return 0, false
	}
	dynamic = a.required >= 0 || len(a.anti) > 0
	p.key.Reset()
	p.key.WriteString(strconv.Itoa(int(a.required)))
	for _, list := range [][]int32{a.anti, a.heldAnti} {
		p.key.WriteByte('/')
		for _, id := range list {
			p.key.WriteString(strconv.Itoa(int(id)))
			p.key.WriteByte(',')
		}
	}
	key := p.key.String()
	id, ok := p.classIDs[key]
	if !ok {
		id = int32(len(p.classIDs) + 1)
		p.classIDs[key] = id
	}
	return id, dynamic
}

// move counts a task placed on node (delta 1) or taken off it (-1).
func (p *interPod) move(a *taskAffinity, node int, delta int32) {
	for _, id := range a.counted {
		p.counters[id].add(node, delta)
	}
	for _, id := range a.holds {
		p.held[id].add(node, delta)
	}
}

// topology returns the domains of key, made on first use.
func (p *interPod) topology(key string) *topology {
	if topo, ok := p.topologies[key]; ok {
		return topo
	}
	topo := &topology{of: make([]int32, len(p.nodes.nodes))}
	ids := map[string]int32{}
	for i, n := range p.nodes.nodes {
		v, ok := n.Labels[key]
		if !ok {
			topo.of[i] = -1
			continue
		}
		d, seen := ids[v]
		if !seen {
			d = int32(len(topo.nodes))
			ids[v] = d
			topo.nodes = append(topo.nodes, nil)
		}
		topo.of[i] = d
		topo.nodes[d] = append(topo.nodes[d], int32(i))
	}
	p.topologies[key] = topo
	return topo
}

// term returns term parsed, once per cycle for equal terms.
func (p *interPod) term(ns string, podLabels map[string]string, term *corev1.PodAffinityTerm) (*podTerm, string) {
	p.key.Reset()
	writeTermKey(&p.key, ns, podLabels, term)
	key := p.key.String()
	t, ok := p.termIDs[key]
	if !ok {
		parsed := newPodTerm(ns, podLabels, term)
		t = &parsed
		p.termIDs[key] = t
	}
	return t, key
}

// counter returns the counter of terms (all to be matched) as carried by
// a pod of namespace ns with podLabels.
func (p *interPod) counter(ns string, podLabels map[string]string, terms []corev1.PodAffinityTerm) int32 {
	parsed := make([]*podTerm, len(terms))
	var key strings.Builder
	for i := range terms {
		t, k := p.term(ns, podLabels, &terms[i])
		parsed[i] = t
		key.WriteString(k)
		key.WriteByte(0)
	}
	if id, ok := p.counterIDs[key.String()]; ok {
		return id
	}
	id := int32(len(p.counters))
	p.counterIDs[key.String()] = id
	c := &termCounter{terms: parsed, topos: make([]*topology, len(parsed)), counts: make([]map[int32]int32, len(parsed))}
	for i, t := range parsed {
		c.topos[i] = p.topology(t.topologyKey)
		c.counts[i] = map[int32]int32{}
	}
	p.counters = append(p.counters, c)
	p.counterIx.add(id, c.selectors()...)
	return id
}

// holdTerms returns the held terms a pod brings to its node: its required
// anti-affinity terms and its preferred terms. Its required affinity terms
// are not held: Volcano scores existing pods' required affinity with a
// weight of 0.
func (p *interPod) holdTerms(ns string, podLabels map[string]string, pa *corev1.PodAffinity, anti *corev1.PodAntiAffinity) []int32 {
	var ids []int32
	if anti != nil {
		for i := range anti.RequiredDuringSchedulingIgnoredDuringExecution {
			ids = append(ids, p.heldTerm(ns, podLabels, &anti.RequiredDuringSchedulingIgnoredDuringExecution[i], 0))
		}
		for i := range anti.PreferredDuringSchedulingIgnoredDuringExecution {
			if w := &anti.PreferredDuringSchedulingIgnoredDuringExecution[i]; w.Weight != 0 {
				ids = append(ids, p.heldTerm(ns, podLabels, &w.PodAffinityTerm, -w.Weight))
			}
		}
	}
	if pa != nil {
		for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
			if w := &pa.PreferredDuringSchedulingIgnoredDuringExecution[i]; w.Weight != 0 {
				ids = append(ids, p.heldTerm(ns, podLabels, &w.PodAffinityTerm, w.Weight))
			}
		}
	}
	return ids
}

func (p *interPod) heldTerm(ns string, podLabels map[string]string, term *corev1.PodAffinityTerm, weight int32) int32 {
	t, key := p.term(ns, podLabels, term)
	key += "\x00" + strconv.Itoa(int(weight))
	if id, ok := p.heldIDs[key]; ok {
		return id
	}
	id := int32(len(p.held))
	p.heldIDs[key] = id
	p.held = append(p.held, &heldTerm{term: t, topo: p.topology(t.topologyKey), weight: weight, holders: map[int32]int32{}})
	p.heldIx.add(id, t.selector)
	return id
}

func (c *termCounter) selectors() []labels.Selector {
	sels := make([]labels.Selector, len(c.terms))
	for i, t := range c.terms {
		sels[i] = t.selector
	}
	return sels
}

func (c *termCounter) matches(ns string, nsLabels, podLabels labels.Set) bool {
	for _, t := range c.terms {
		if !t.matches(ns, nsLabels, podLabels) {
			return false
		}
	}
	return true
}

// add counts a matching pod on node i (delta 1), or takes it off (-1).
func (c *termCounter) add(i int, delta int32) {
	for k, topo := range c.topos {
		if d := topo.of[i]; d >= 0 {
			c.counts[k][d] += delta
			c.total += delta
		}
	}
}

// in is how many matching pods term k counts in node i's domain.
func (c *termCounter) in(k, i int) int32 {
	d := c.topos[k].of[i]
	if d < 0 {
		return 0
	}
	return c.counts[k][d]
}

func (h *heldTerm) add(i int, delta int32) {
	if d := h.topo.of[i]; d >= 0 {
		h.holders[d] += delta
		h.total += delta
	}
}

// in is how many holders are in node i's domain.
func (h *heldTerm) in(i int) int32 {
	d := h.topo.of[i]
	if d < 0 {
		return 0
	}
	return h.holders[d]
}
