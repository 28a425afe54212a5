package scheduler

// Choosing a node for a task its inter-pod affinity steers. Among the
// nodes that pass every check: the highest affinity score; then, for the
// first pod of a group with required affinity to itself, the domain with
// room for most of the group (best fit alone would put it on the fullest
// node that takes one and leave no room for the rest); then best fit.
// Each case looks at as few nodes as it can: those of the domains where
// the required pods are, those a preferred term scores, or the best-fit
// order up to the first that passes.

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
// the group's pods of its shape in j decides after the score.
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
	topo, group := p.groupTopology(t.aff), int64(c.unplacedOfShape(j, t.shape))
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

// unplacedOfShape counts j's unplaced tasks of a shape.
func (c *cycle) unplacedOfShape(j *jobState, shape int32) int {
	n := 0
	for _, t := range j.tasks {
		if !t.placed && t.shape == shape {
			n++
		}
	}
	return n
}
