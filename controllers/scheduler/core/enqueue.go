package core

import (
	"fmt"
	"slices"

	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// Admission (Volcano's enqueue action with its proportion and overcommit
// votes, simplified). A Pending PodGroup becomes Inqueue, and only then does
// the job controller create its pods, when its queue is Open and its
// minResources (only the resources it names count) fit three limits:
//
//   - the cluster: minResources plus what admitted gangs have reserved fit
//     OvercommitFactor × allocatable − used (overcommit);
//   - the queue's capability: plus what the queue holds and has reserved;
//   - the queue's deserved share × OvercommitFactor, likewise. This is what
//     makes admitted resources follow the queue weights; a queue that holds
//     and reserves nothing may always admit, so that a gang larger than
//     its share can still start.
//
// Queues go lowest share first and jobs by priority, then age: the first
// jobs get the room. A job that does not fit stays Pending with the reason,
// and smaller jobs behind it may still be admitted (as in Volcano).
// What an admitted gang reserves is its minResources less what it holds.
func (c *cycle) enqueue() {
	factor := c.opts.OvercommitFactor
	idle := make([]float64, c.ix.dims())
	reserved := make([]float64, c.ix.dims())
	for d := range idle {
		if d != dimPods {
			idle[d] = float64(c.nodes.total[d])*factor - float64(c.nodes.used[d])
		}
	}
	for _, q := range c.queues {
		for d := range reserved {
			reserved[d] += q.inqueue[d]
		}
	}
	pending := map[*queueState][]*jobState{}
	for _, j := range c.jobs {
		if j.phase != vcv1beta1.PodGroupPending {
			continue
		}
		if j.queue == nil || !j.queue.open {
			j.cond = queueNotOpen(j)
			continue
		}
		pending[j.queue] = append(pending[j.queue], j)
	}
	queues := slices.Clone(c.queues)
	slices.SortFunc(queues, compareQueues)
	for _, q := range queues {
		jobs := pending[q]
		slices.SortFunc(jobs, compareJobs)
		for _, j := range jobs {
			if why := c.admissionBlock(q, j, idle, reserved); why != "" {
				j.cond = &Condition{Reason: vcv1beta1.NotEnoughResourcesReason, Message: why}
				continue
			}
			j.phase = vcv1beta1.PodGroupInqueue
			j.admittedNow = true
			for d, x := range j.minRes {
				if d != dimPods {
					q.inqueue[d] += float64(x)
					reserved[d] += float64(x)
				}
			}
			c.stats.Admitted++
		}
	}
}

// admissionBlock says why job j may not be admitted to q now; "" when it may.
func (c *cycle) admissionBlock(q *queueState, j *jobState, idle, reserved []float64) string {
	if j.minResGap != "" {
		return fmt.Sprintf("resource in cluster is overused: no node offers %s", j.minResGap)
	}
	factor := c.opts.OvercommitFactor
	empty := true
	for d := range q.allocated {
		if q.allocated[d] > 0 || q.inqueue[d] > 0 {
			empty = false
		}
	}
	for d, x := range j.minRes {
		if d == dimPods || x <= 0 {
			continue
		}
		want := float64(x)
		name, f := c.ix.names[d], c.ix.format
		if reserved[d]+want > idle[d]+settleEpsilon {
			return fmt.Sprintf("resource in cluster is overused: %s idle %s (overcommit %.2g), reserved by admitted gangs %s, minResources %s",
				name, f(d, idle[d]), factor, f(d, reserved[d]), f(d, want))
		}
		held := q.allocated[d] + q.inqueue[d]
		if held+want > q.capability[d]+settleEpsilon {
			return fmt.Sprintf("queue resource quota insufficient: queue %s capability %s %s, allocated %s, reserved %s, minResources %s",
				q.name, name, f(d, q.capability[d]), f(d, q.allocated[d]), f(d, q.inqueue[d]), f(d, want))
		}
		if !empty && held+want > q.deserved[d]*factor+settleEpsilon {
			return fmt.Sprintf("queue resource quota insufficient: queue %s deserves %s %s (overcommit %.2g), allocated %s, reserved %s, minResources %s",
				q.name, name, f(d, q.deserved[d]), factor, f(d, q.allocated[d]), f(d, q.inqueue[d]), f(d, want))
		}
	}
	return ""
}

// queueNotOpen is the condition of a job whose queue takes nothing new.
func queueNotOpen(j *jobState) *Condition {
	msg := fmt.Sprintf("queue %s does not exist", j.job.Queue)
	if j.queue != nil {
		state := j.queue.state
		msg = fmt.Sprintf("queue %s is %s: it admits and places nothing new", j.queue.name, state)
	}
	return &Condition{Reason: ReasonQueueNotOpen, Message: msg}
}
