package job

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/controllers/queue"
)

// queueProblem says why the Job may not start on the named queue, or is empty: Jobs go only to
// leaf queues of the hierarchy, never to the root queue, one with child queues, or one whose
// parents form a cycle. The API server refuses such a Job on create (a CRD rule for root, an
// admission policy for a queue labelled as having children); this holds one that got through
// (its queue gained a child a moment before, or the policy is not installed) until its queue is
// a leaf. A Job that has started keeps running, as in Volcano, whose webhook checks only on
// create.
func (c *Controller) queueProblem(job *batch.Job, name string) string {
	if p := job.Status.State.Phase; p != "" && p != batch.Pending {
		return ""
	}
	queues, err := c.cfg.Cache.Queues().Lister().List(labels.Everything())
	if err != nil {
		return ""
	}
	return leafProblem(name, queues)
}

// leafProblem says why the named queue, among queues, takes no Job, or is empty.
func leafProblem(name string, queues []*scheduling.Queue) string {
	if name == queue.RootQueue {
		return "queue root is the top of the queue hierarchy and takes no Job: set spec.queue to a leaf queue"
	}
	byName := make(map[string]*scheduling.Queue, len(queues))
	var children []string
	for _, q := range queues {
		byName[q.Name] = q
		if queue.ParentOf(q) == name {
			children = append(children, q.Name)
		}
	}
	if len(children) > 0 {
		slices.Sort(children)
		if len(children) > 3 {
			children = append(children[:3], "...")
		}
		return fmt.Sprintf("queue %q has child queues (%s): a Job runs only on a leaf queue; set spec.queue to one",
			name, strings.Join(children, ", "))
	}
	get := func(n string) (*scheduling.Queue, bool) { q, ok := byName[n]; return q, ok }
	if loop := queue.Cycle(name, get); len(loop) > 0 {
		return fmt.Sprintf("the parents of queue %q form a cycle (%s): fix the queues' spec.parent",
			name, strings.Join(loop, " → "))
	}
	return ""
}
