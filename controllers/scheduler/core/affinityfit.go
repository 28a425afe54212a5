package core

// Checking and choosing nodes under inter-pod affinity. A node passes for
// a pod when (kube-scheduler's order and messages):
//   - every topology key of its required affinity is a label of the node,
//     and in each of those domains some pod matches all of its terms, or no
//     pod anywhere does and the pod matches them itself (the first of a
//     group with affinity to itself);
//   - no pod its required anti-affinity terms select is in the node's
//     domain of the term;
//   - no pod whose required anti-affinity selects it is in the node's
//     domain of that term (the symmetric check).
//
// Preferred terms score a node: the weight of each of the pod's terms per
// matching pod in the node's domain (negative for anti-affinity), plus the
// weight of each preferred term of a pod in the node's domain that selects
// the pod. Among the nodes that pass: the highest score; then, for the
// first pod of a group with required affinity to itself, the domain with
// room for most of the group (best fit alone would put it on the fullest
// node that takes one and leave no room for the rest); then best fit. Each
// case looks at as few nodes as it can: those of the domains where the
// required pods are, those a preferred term scores, or the best-fit order
// up to the first that passes.

// affinityFit returns the node for t, a task of j, or -1 when none passes.
func (c *cycle) affinityFit(t *taskState, j *jobState) int {
	p, a := c.pods, t.aff
	scored := p.scores(a)
	if scored {
		p.scoreNodes(a)
		defer p.clearScores()
	}
	switch {
	case p.firstOfGroup(a):
		return c.groupFit(t, j)
	case a.required >= 0:
		c.cands = p.requiredNodes(a, c.cands[:0])
		return c.bestAmong(t, c.cands, func(int32) bool { return true })
	case scored:
		return c.scoredFit(t)
	}
	return c.firstPassing(t, false)
}

// passes: node i can take t now.
func (c *cycle) passes(t *taskState, eligible []bool, i int32) bool {
	return eligible[i] && c.nodes.fits(int(i), t.req) && c.pods.reason(t.aff, int(i)) == ""
}

// firstPassing walks the best-fit order to the first node that takes t,
// past those with a negative score when skipNegative.
func (c *cycle) firstPassing(t *taskState, skipNegative bool) int {
	eligible := c.signatureOf(t.sig).eligible
	for _, i := range c.nodes.withRoom(t.req, int(t.dim)) {
		if skipNegative && c.pods.nodeScore[i] < 0 {
			continue
		}
		if c.passes(t, eligible, i) {
			return int(i)
		}
	}
	return -1
}

// bestAmong is, of nodes that want says may be chosen and that take t,
// the one with the highest score, then first in best-fit order.
func (c *cycle) bestAmong(t *taskState, nodes []int32, want func(int32) bool) int {
	eligible := c.signatureOf(t.sig).eligible
	at := c.nodes.order(int(t.dim)).at
	score := c.pods.nodeScore
	best := int32(-1)
	for _, i := range nodes {
		if !want(i) || !c.passes(t, eligible, i) {
			continue
		}
		if best < 0 || (score != nil && score[i] > score[best]) ||
			((score == nil || score[i] == score[best]) && at[i] < at[best]) {
			best = i
		}
	}
	return int(best)
}

// scoredFit: a node some term scores above 0 if one takes t, else the
// best fit among those scored 0, else the best of those scored below.
func (c *cycle) scoredFit(t *taskState) int {
	p := c.pods
	if best := c.bestAmong(t, p.touched, func(i int32) bool { return p.nodeScore[i] > 0 }); best >= 0 {
		return best
	}
	if best := c.firstPassing(t, true); best >= 0 {
		return best
	}
	return c.bestAmong(t, p.touched, func(i int32) bool { return p.nodeScore[i] < 0 })
}

// groupFit places the first pod of a group with required affinity to
// itself: every node that takes it is looked at, and the domain's room for
// the group's pods in j (as many more pods as t) decides after the score.
func (c *cycle) groupFit(t *taskState, j *jobState) int {
	p, ns := c.pods, c.nodes
	eligible := c.signatureOf(t.sig).eligible
	cands := c.cands[:0]
	for _, i := range ns.withRoom(t.req, int(t.dim)) {
		if c.passes(t, eligible, i) {
			cands = append(cands, i)
		}
	}
	c.cands = cands
	topo, group := p.groupTopology(t.aff), int64(c.unplacedOfGroup(j, t.aff.required))
	room := p.room[:0] // per domain: pods of the group it has room for
	room = append(room, make([]int64, len(topo.nodes))...)
	p.room = room
	for _, i := range cands {
		room[topo.of[i]] += min(ns.room(int(i), t.req), group)
	}
	best, bestScore, bestRoom := -1, int64(0), int64(0)
	for _, i := range cands {
		var s int64
		if p.nodeScore != nil {
			s = p.nodeScore[i]
		}
		r := min(room[topo.of[i]], group)
		if best < 0 || s > bestScore || (s == bestScore && r > bestRoom) {
			best, bestScore, bestRoom = int(i), s, r
		}
	}
	return best
}

// unplacedOfGroup counts j's unplaced tasks with the required affinity
// terms of counter id.
func (c *cycle) unplacedOfGroup(j *jobState, id int32) int {
	n := 0
	for _, t := range j.tasks {
		if !t.placed && t.aff != nil && t.aff.required == id {
			n++
		}
	}
	return n
}

// reason says why inter-pod affinity keeps the task off node i; "" when
// it does not.
func (p *interPod) reason(a *taskAffinity, i int) string {
	if a.required >= 0 && !p.affinityHolds(a, i) {
		return reasonPodAffinity
	}
	for _, id := range a.anti {
		if c := p.counters[id]; c.total > 0 && c.in(0, i) > 0 {
			return reasonPodAntiAffinity
		}
	}
	for _, id := range a.heldAnti {
		if h := p.held[id]; h.total > 0 && h.in(i) > 0 {
			return reasonExistingAntiAffinity
		}
	}
	return ""
}

// affinityHolds: node i has every topology key of the task's required
// affinity, and each of its domains there holds a pod matching all the
// terms; or no pod matches anywhere and the task matches them itself.
func (p *interPod) affinityHolds(a *taskAffinity, i int) bool {
	c := p.counters[a.required]
	exist := true
	for k, topo := range c.topos {
		d := topo.of[i]
		if d < 0 {
			return false
		}
		if c.counts[k][d] <= 0 {
			exist = false
		}
	}
	return exist || (c.total == 0 && a.selfMatch)
}

// steers reports whether the task's inter-pod affinity may keep it off
// some node, or score the nodes, as things stand.
func (p *interPod) steers(a *taskAffinity) bool {
	if a.required >= 0 || p.scores(a) {
		return true
	}
	for _, id := range a.anti {
		if p.counters[id].total > 0 {
			return true
		}
	}
	for _, id := range a.heldAnti {
		if p.held[id].total > 0 {
			return true
		}
	}
	return false
}

// scores reports whether some preferred term may score the nodes apart.
func (p *interPod) scores(a *taskAffinity) bool {
	for _, w := range a.preferred {
		if p.counters[w.id].total > 0 {
			return true
		}
	}
	for _, id := range a.heldPref {
		if p.held[id].total > 0 {
			return true
		}
	}
	return false
}

// scoreNodes adds, into nodeScore, the score each preferred term gives the
// nodes for the task, and lists in touched the nodes it scored (the others
// score 0); clearScores undoes it.
func (p *interPod) scoreNodes(a *taskAffinity) {
	if p.nodeScore == nil {
		p.nodeScore = make([]int64, len(p.nodes.nodes))
		p.scored = make([]bool, len(p.nodes.nodes))
	}
	for _, w := range a.preferred {
		if c := p.counters[w.id]; c.total > 0 {
			p.spread(c.topos[0], c.counts[0], int64(w.weight))
		}
	}
	for _, id := range a.heldPref {
		if h := p.held[id]; h.total > 0 {
			p.spread(h.topo, h.holders, int64(h.weight))
		}
	}
}

// spread adds weight per pod counted to the nodes of each domain.
func (p *interPod) spread(topo *topology, counts map[int32]int32, weight int64) {
	for d, n := range counts {
		if n == 0 {
			continue
		}
		for _, i := range topo.nodes[d] {
			if !p.scored[i] {
				p.scored[i] = true
				p.touched = append(p.touched, i)
			}
			p.nodeScore[i] += weight * int64(n)
		}
	}
}

func (p *interPod) clearScores() {
	for _, i := range p.touched {
		p.nodeScore[i], p.scored[i] = 0, false
	}
	p.touched = p.touched[:0]
}

// requiredNodes appends to buf the nodes in the domains where pods match
// the task's required affinity (by its first term; reason checks all).
func (p *interPod) requiredNodes(a *taskAffinity, buf []int32) []int32 {
	c := p.counters[a.required]
	for d, n := range c.counts[0] {
		if n > 0 {
			buf = append(buf, c.topos[0].nodes[d]...)
		}
	}
	return buf
}

// firstOfGroup: the task's required affinity is met only because no pod
// matches it yet and the task matches it itself; the group that follows
// it will have to fit into the domain it goes to.
func (p *interPod) firstOfGroup(a *taskAffinity) bool {
	return a.required >= 0 && a.selfMatch && p.counters[a.required].total == 0
}

// groupTopology is the topology of the task's first required affinity term.
func (p *interPod) groupTopology(a *taskAffinity) *topology {
	return p.counters[a.required].topos[0]
}
