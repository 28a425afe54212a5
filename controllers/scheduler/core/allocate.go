package core

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

// gangTurn tries to complete the gang in one go. Each task is checked
// against the nodes first and the queue's room second, so that a gang the
// cluster cannot hold is told so, rather than that its queue is full.
func (c *cycle) gangTurn(q *queueState, j *jobState) {
	if c.rejectFast(q, j) {
		return
	}
	st := c.statement()
	f := &taskFailures{}
	var retry []*taskState // tasks with required pod affinity that found no node
	var retryWhy []string
	placedAtRetry := 0 // placements when the first of them failed
	for _, t := range c.gangOrder(j) {
		if j.isReady() {
			break
		}
		if why, ok := j.failed[t.shape]; ok && !c.exhaustive {
			f.add(why, 1)
			continue
		}
		why := c.tryPlace(q, j, st, t)
		switch {
		case why == "":
		case t.aff != nil && t.aff.required >= 0:
			if retry == nil {
				placedAtRetry = len(st.placed)
			}
			retry, retryWhy = append(retry, t), append(retryWhy, why)
		default:
			j.fail(t, why)
			f.add(why, 1)
		}
	}
	// A task kept off every node by its own required pod affinity may find
	// one once more of its gang is placed (affinity to another task's pods):
	// such tasks are tried again as long as that places some.
	for progress := len(st.placed) > placedAtRetry; progress && len(retry) > 0 && !j.isReady(); {
		progress = false
		kept := 0
		for k, t := range retry {
			why := retryWhy[k]
			if !j.isReady() {
				if why = c.tryPlace(q, j, st, t); why == "" {
					progress = true
					continue
				}
			}
			retry[kept], retryWhy[kept] = t, why
			kept++
		}
		retry, retryWhy = retry[:kept], retryWhy[:kept]
	}
	for _, why := range retryWhy {
		f.add(why, 1)
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

// tryPlace places t, a task of j, on the node findNode picks if its
// queue's room allows; else it says why not.
func (c *cycle) tryPlace(q *queueState, j *jobState, st *statement, t *taskState) string {
	node, why := c.findNode(t, j, st)
	if node < 0 {
		return why
	}
	if ok, d := q.roomFor(t.req); !ok {
		return q.fullReason(d, c.ix)
	}
	c.place(q, j, st, t, node)
	return ""
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
		node, why := c.findNode(t, j, st)
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
// nodes and the queue's room only shrink once a turn is over. Not so for a
// task with required pod affinity, which more pods placed may let in: its
// shape is not remembered.
func (j *jobState) fail(t *taskState, why string) {
	if t.aff != nil && t.aff.required >= 0 {
		return
	}
	if j.failed == nil {
		j.failed = map[int32]string{}
	}
	j.failed[t.shape] = why
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
