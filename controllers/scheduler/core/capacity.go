package core

import vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

// The cycle's shortcuts. Between turns, free node resources and queue room
// only shrink: a turn either commits its placements or undoes them all. So
// what is learnt about a task shape (a node-constraint signature and a
// request) holds for the rest of the cycle:
//
//   - capacity[shape] bounds how many more tasks of the shape fit. When a
//     search fails after a turn has placed only tasks of that shape (say k
//     of them), the cluster before the turn held exactly k: identical tasks
//     fill each node up to its own limit, whatever the order. Each committed
//     placement of the shape lowers the bound by one; discards restore the
//     state the bound was taken from.
//   - a gang whose pods are all of one shape and needs more than capacity
//     is turned down without a search; one whose pods all ask the same and
//     needs more than its queue's deserved room is too, when the cluster as
//     a whole would have the room (else the search runs, to name the nodes
//     as the reason).
//   - a job remembers the shapes that failed (jobState.failed).
//
// TestShortcutsChangeNoOutcome checks that they change no binding or phase.

// rejectFast turns a gang down without a search when the cycle already
// knows it cannot be completed: all its pods are alike, and fewer than it
// needs fit the cluster (a known bound for their shape) or its queue's
// deserved room while the cluster as a whole would have the room.
func (c *cycle) rejectFast(q *queueState, j *jobState) bool {
	if c.exhaustive {
		return false
	}
	var first *taskState
	sameReq, sameShape := true, true
	pending := 0
	for _, t := range j.tasks {
		if t.placed {
			continue
		}
		pending++
		if first == nil {
			first = t
			continue
		}
		if t.shape != first.shape {
			sameShape = false
			if !equalInts(t.req, first.req) {
				sameReq = false
				break
			}
		}
	}
	if first == nil || !sameReq {
		return false
	}
	need := j.needed()
	f := &taskFailures{}
	placeable := 0
	if capacity := c.capacity[first.shape]; sameShape && capacity >= 0 && capacity < need {
		placeable = min(capacity, pending)
		f.add(c.capacityWhy[first.shape], pending-placeable)
	} else if room, d := q.tasksWithin(first.req); room < need && c.nodes.freeInTotal(first.req, need) {
		placeable = min(room, pending)
		f.add(q.fullReason(d, c.ix), pending-placeable)
	} else {
		return false
	}
	j.cond = &Condition{Reason: vcv1beta1.NotEnoughResourcesReason, Message: gangMessage(j, placeable, f)}
	c.stats.FastRejects++
	return true
}

// findNode picks the node for t, a task of j, or says why there is none.
// st holds the placements made so far in this turn.
func (c *cycle) findNode(t *taskState, j *jobState, st *statement) (int, string) {
	if limit := c.capacity[t.shape]; limit >= 0 && st.count(t.shape) >= limit && !c.exhaustive {
		return -1, c.capacityWhy[t.shape]
	}
	node := -1
	if t.missing == "" {
		if t.aff != nil && c.pods.steers(t.aff) {
			node = c.affinityFit(t, j)
		} else {
			node = c.nodes.bestFit(t.req, int(t.dim), c.signatureOf(t.sig).eligible)
		}
	}
	if node >= 0 {
		return node, ""
	}
	why := c.fitError(t)
	// With nothing but tasks of this shape placed in this turn, the cluster
	// as it was before the turn holds exactly that many of them: identical
	// tasks fill each node up to its own limit whatever the order. Not so
	// when placing them changes which nodes can take them.
	if !c.shapeDynamic[t.shape] && (st.only == t.shape || st.only == -1) {
		if n := st.count(t.shape); c.capacity[t.shape] < 0 || n < c.capacity[t.shape] {
			c.capacity[t.shape] = n
			c.capacityWhy[t.shape] = why
		}
	}
	return -1, why
}

func equalInts(a, b []int64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
