package scheduler

import (
	"container/heap"
	"fmt"
	"maps"
	"slices"

	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// Options tune a cycle.
type Options struct {
	// OvercommitFactor lets admission reserve this multiple of the cluster's
	// (and of each queue's deserved) resources for gangs whose pods are not
	// placed yet, so that pods are ready to go when room appears. Volcano's
	// overcommit plugin defaults to 1.2; values below 1 count as 1.
	OvercommitFactor float64
}

// DefaultOptions are Volcano's defaults.
func DefaultOptions() Options {
	return Options{OvercommitFactor: 1.2}
}

// Allocate runs one scheduling cycle over snap: admission (PodGroups Pending
// → Inqueue), then gang placement of the pending pods of admitted jobs. It
// reads snap only, does no I/O, and returns the same Result for the same
// snapshot.
func Allocate(snap Snapshot, opts Options) Result {
	opts.OvercommitFactor = max(opts.OvercommitFactor, 1)
	c := newCycle(snap, opts)
	c.enqueue()
	c.allocate()
	return c.result()
}

// allocate deals turns: the queue with the lowest share gives a turn to its
// first job. A gang still short of minMember places its tasks tentatively
// and keeps them only if it reaches minMember (and each task's
// minTaskMember); a job that has reached it places one more pod per turn,
// as Volcano does, so that other queues and gangs get their turns between
// a large job's extra pods.
func (c *cycle) allocate() {
	c.fillQueues()
	exhausted := make([]bool, len(c.queues))
	for {
		q := c.nextQueue(exhausted)
		if q == nil {
			break
		}
		j := heap.Pop(&q.jobs).(*jobState)
		if j.ready {
			c.extraTurn(q, j)
		} else {
			c.gangTurn(q, j)
		}
	}
	c.explainUnreached()
}

// fillQueues puts every admitted job with pods to place into its queue's
// heap, and says why the others that wait for minMember cannot be placed.
func (c *cycle) fillQueues() {
	for _, j := range c.jobs {
		if !admitted(j.phase) {
			continue
		}
		q := j.queue
		if q == nil || !q.open {
			if !j.ready {
				j.cond = queueNotOpen(j)
			}
			continue
		}
		if !j.ready {
			if why := c.invalid(j); why != nil {
				// A gang admitted just now has no pods yet: nothing to say.
				if !j.admittedNow {
					j.cond = why
				}
				continue
			}
		}
		if c.unplaced(j) > 0 {
			heap.Push(&q.jobs, j)
		}
	}
}

// nextQueue is the queue with jobs left and the lowest share. A queue that
// holds its deserved amount is done for the cycle (exhausted): what it
// holds only grows between turns.
func (c *cycle) nextQueue(exhausted []bool) *queueState {
	var best *queueState
	for i, q := range c.queues {
		if exhausted[i] || q.jobs.Len() == 0 {
			continue
		}
		if q.overused() {
			exhausted[i] = true
			continue
		}
		if best == nil || compareQueues(q, best) < 0 {
			best = q
		}
	}
	return best
}

// explainUnreached gives a reason to the gangs whose queue was exhausted
// before their turn.
func (c *cycle) explainUnreached() {
	for _, q := range c.queues {
		for _, j := range q.jobs {
			if !j.ready {
				f := &taskFailures{}
				f.add(fmt.Sprintf("queue %s is overused: it holds its deserved resources", q.name), c.unplaced(j))
				j.cond = &Condition{Reason: vcv1beta1.NotEnoughResourcesReason, Message: gangMessage(j, 0, f)}
			}
		}
	}
}

// admitted: the phase of a job whose pods may be placed.
func admitted(phase vcv1beta1.PodGroupPhase) bool {
	switch phase {
	case vcv1beta1.PodGroupInqueue, vcv1beta1.PodGroupRunning, vcv1beta1.PodGroupUnknown:
		return true
	}
	return false
}

func (c *cycle) unplaced(j *jobState) int {
	n := 0
	for _, t := range j.tasks {
		if !t.placed {
			n++
		}
	}
	return n
}

// invalid is Volcano's gang validity: enough pods must exist to ever reach
// minMember and each enforced minTaskMember. It says why not, or nil.
func (c *cycle) invalid(j *jobState) *Condition {
	have := int(j.placed) + c.unplaced(j)
	if have < int(j.job.MinMember) {
		return &Condition{
			Reason:  vcv1beta1.NotEnoughPodsReason,
			Message: fmt.Sprintf("Not enough valid tasks for gang-scheduling, valid: %d, min: %d", have, j.job.MinMember),
		}
	}
	if j.minTask == nil {
		return nil
	}
	pending := map[string]int32{}
	for _, t := range j.tasks {
		pending[t.task.Name]++
	}
	for _, name := range slices.Sorted(maps.Keys(j.minTask)) {
		n := j.minTask[name]
		if valid := j.placedByTask[name] + pending[name]; valid < n {
			return &Condition{
				Reason:  vcv1beta1.NotEnoughPodsOfTaskReason,
				Message: fmt.Sprintf("Not enough valid pods of task %s for gang-scheduling, valid: %d, min: %d", name, valid, n),
			}
		}
	}
	return nil
}

// statement is a gang's tentative placements: committed together or undone.
type statement struct {
	placed []placement
	// byShape counts the placements per task shape (few: gangs are mostly
	// alike); only is their shape while they all share one (-1 empty, -2
	// mixed).
	byShape []shapeCount
	only    int32
}

type placement struct {
	task *taskState
	node int
}

type shapeCount struct {
	shape int32
	n     int
}

// statement returns the cycle's statement, emptied.
func (c *cycle) statement() *statement {
	st := &c.stmt
	st.placed, st.byShape, st.only = st.placed[:0], st.byShape[:0], -1
	return st
}

func (st *statement) count(shape int32) int {
	for _, sc := range st.byShape {
		if sc.shape == shape {
			return sc.n
		}
	}
	return 0
}

func (st *statement) add(shape int32) {
	switch st.only {
	case -1:
		st.only = shape
	case shape:
	default:
		st.only = -2
	}
	for i := range st.byShape {
		if st.byShape[i].shape == shape {
			st.byShape[i].n++
			return
		}
	}
	st.byShape = append(st.byShape, shapeCount{shape, 1})
}

// gangTurn tries to complete the gang in one go. Each task is checked
// against the nodes first and the queue's room second, so that a gang the
// cluster cannot hold is told so, rather than that its queue is full.
func (c *cycle) gangTurn(q *queueState, j *jobState) {
	if c.rejectFast(q, j) {
		return
	}
	st := c.statement()
	f := &taskFailures{}
	for _, t := range c.gangOrder(j) {
		if j.isReady() {
			break
		}
		if why, ok := j.failed[t.shape]; ok && !c.exhaustive {
			f.add(why, 1)
			continue
		}
		node, why := c.findNode(t, st)
		if node < 0 {
			j.fail(t, why)
			f.add(why, 1)
			continue
		}
		if ok, d := q.roomFor(t.req); !ok {
			why := q.fullReason(d, c.ix)
			j.fail(t, why)
			f.add(why, 1)
			continue
		}
		c.place(q, j, st, t, node)
	}
	if !j.isReady() {
		placeable := len(st.placed)
		c.discard(q, j, st)
		j.cond = &Condition{Reason: vcv1beta1.NotEnoughResourcesReason, Message: gangMessage(j, placeable, f)}
		return
	}
	c.commit(q, j, st)
	j.ready = true
	c.stats.GangsPlaced++
	if c.unplaced(j) > 0 {
		heap.Push(&q.jobs, j)
	}
}

// gangOrder lists the gang's unplaced tasks: first, per task name, those
// still needed for its minTaskMember; then the rest.
func (c *cycle) gangOrder(j *jobState) []*taskState {
	order := c.order[:0]
	if j.minTask == nil {
		for _, t := range j.tasks {
			if !t.placed {
				order = append(order, t)
			}
		}
		c.order = order
		return order
	}
	var rest []*taskState
	taken := map[string]int32{}
	for _, t := range j.tasks {
		if t.placed {
			continue
		}
		name := t.task.Name
		if j.placedByTask[name]+taken[name] < j.minTask[name] {
			taken[name]++
			order = append(order, t)
			continue
		}
		rest = append(rest, t)
	}
	c.order = append(order, rest...)
	return c.order
}

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

// extraTurn places one more pod of a job that has reached minMember. A task
// shape that found no room is not tried again this cycle.
func (c *cycle) extraTurn(q *queueState, j *jobState) {
	for j.cursor < len(j.tasks) {
		t := j.tasks[j.cursor]
		j.cursor++
		if t.placed {
			continue
		}
		if _, ok := j.failed[t.shape]; ok && !c.exhaustive {
			continue
		}
		if ok, d := q.roomFor(t.req); !ok {
			j.fail(t, q.fullReason(d, c.ix))
			continue
		}
		st := c.statement()
		node, why := c.findNode(t, st)
		if node < 0 {
			j.fail(t, why)
			continue
		}
		c.place(q, j, st, t, node)
		c.commit(q, j, st)
		if j.cursor < len(j.tasks) {
			heap.Push(&q.jobs, j)
		}
		return
	}
}

// fail remembers that tasks of t's shape cannot be placed this cycle: the
// nodes and the queue's room only shrink once a turn is over.
func (j *jobState) fail(t *taskState, why string) {
	if j.failed == nil {
		j.failed = map[int32]string{}
	}
	j.failed[t.shape] = why
}

// findNode picks the node for t, or says why there is none. st holds the
// placements made so far in this turn.
func (c *cycle) findNode(t *taskState, st *statement) (int, string) {
	if limit := c.capacity[t.shape]; limit >= 0 && st.count(t.shape) >= limit && !c.exhaustive {
		return -1, c.capacityWhy[t.shape]
	}
	node := -1
	if t.missing == "" {
		node = c.nodes.bestFit(t.req, t.dim, c.signatureOf(t.sig).eligible)
	}
	if node >= 0 {
		return node, ""
	}
	why := c.fitError(t)
	// With nothing but tasks of this shape placed in this turn, the cluster
	// as it was before the turn holds exactly that many of them: identical
	// tasks fill each node up to its own limit whatever the order.
	if st.only == t.shape || st.only == -1 {
		if n := st.count(t.shape); c.capacity[t.shape] < 0 || n < c.capacity[t.shape] {
			c.capacity[t.shape] = n
			c.capacityWhy[t.shape] = why
		}
	}
	return -1, why
}

func (c *cycle) place(q *queueState, j *jobState, st *statement, t *taskState, node int) {
	c.nodes.take(node, t.req)
	q.add(t.req, 1)
	t.placed = true
	j.placed++
	if j.minTask != nil {
		j.placedByTask[t.task.Name]++
	}
	st.placed = append(st.placed, placement{task: t, node: node})
	st.add(t.shape)
}

func (c *cycle) commit(q *queueState, j *jobState, st *statement) {
	for _, p := range st.placed {
		c.bindings = append(c.bindings, Binding{Pod: p.task.task.Key, Node: c.nodes.nodes[p.node].Name, PodGroup: j.key})
		j.bound++
	}
	for _, sc := range st.byShape {
		if c.capacity[sc.shape] >= 0 {
			c.capacity[sc.shape] = max(0, c.capacity[sc.shape]-sc.n)
		}
	}
	q.updateShare()
}

func (c *cycle) discard(q *queueState, j *jobState, st *statement) {
	for i := len(st.placed) - 1; i >= 0; i-- {
		p := st.placed[i]
		c.nodes.give(p.node, p.task.req)
		q.add(p.task.req, -1)
		p.task.placed = false
		j.placed--
		if j.minTask != nil {
			j.placedByTask[p.task.task.Name]--
		}
	}
	c.stats.TasksDiscarded += len(st.placed)
}

// result writes every job's new phase: Running once minMember pods are
// placed; otherwise Inqueue stays Inqueue and anything else goes back to
// Pending (Volcano's rule, so that a gang that lost pods is admitted anew).
func (c *cycle) result() Result {
	r := Result{Bindings: c.bindings, PodGroups: make(map[string]GroupStatus, len(c.jobs))}
	for _, j := range c.jobs {
		s := GroupStatus{Phase: j.phase, Bound: j.bound, Unschedulable: j.cond}
		switch j.phase {
		case vcv1beta1.PodGroupPending, vcv1beta1.PodGroupInqueue, vcv1beta1.PodGroupRunning, vcv1beta1.PodGroupUnknown:
			if j.isReady() {
				s.Phase = vcv1beta1.PodGroupRunning
				s.Unschedulable = nil
			} else if j.phase != vcv1beta1.PodGroupInqueue {
				s.Phase = vcv1beta1.PodGroupPending
			}
		}
		if s.Unschedulable != nil {
			r.Stats.Unschedulable++
		}
		r.PodGroups[j.key] = s
	}
	r.Stats.Nodes, r.Stats.Jobs = c.stats.Nodes, c.stats.Jobs
	r.Stats.Admitted = c.stats.Admitted
	r.Stats.GangsPlaced = c.stats.GangsPlaced
	r.Stats.TasksBound = len(c.bindings)
	r.Stats.TasksDiscarded = c.stats.TasksDiscarded
	r.Stats.FastRejects = c.stats.FastRejects
	return r
}

func equalInts(a, b []int64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// jobHeap orders a queue's jobs by compareJobs.
type jobHeap []*jobState

func (h jobHeap) Len() int           { return len(h) }
func (h jobHeap) Less(a, b int) bool { return compareJobs(h[a], h[b]) < 0 }
func (h jobHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *jobHeap) Push(x any)        { *h = append(*h, x.(*jobState)) }
func (h *jobHeap) Pop() any {
	old := *h
	j := old[len(old)-1]
	*h = old[:len(old)-1]
	return j
}
