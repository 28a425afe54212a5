package core

import (
	"fmt"
	"math"

	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// Fair share between queues, as Volcano's proportion plugin computes it.
// Each queue deserves a part of the cluster in proportion to its weight,
// never more than it asks for (what its jobs hold plus what they wait for)
// nor more than its capability. What a queue does not need is dealt again
// among the others by weight, until the cluster is shared out or nobody
// wants more (water filling). A queue's share is its highest ratio
// allocated/deserved over the resources; the queue with the lowest share
// goes next, and a queue may not place a task past its deserved amount.
// Queue accounting leaves the pods count out, as Volcano does.

// queueState is one queue during a cycle.
type queueState struct {
	name   string
	weight int32
	state  vcv1beta1.QueueState
	open   bool
	// capability is the queue's own cap (+Inf where unset); realCap also caps
	// it at the cluster's size.
	capability, realCap []float64
	// request is what the queue's jobs hold and want; allocated what they
	// hold, including this cycle's tentative placements; inqueue what
	// admitted but unplaced gangs have reserved (their minResources).
	request, allocated, deserved, inqueue []float64
	share                                 float64
	jobs                                  jobHeap
}

// settleEpsilon absorbs float rounding when comparing an integer amount
// with a deserved amount: half a milli-CPU, half a byte.
const settleEpsilon = 0.5

// maxShareRounds bounds the water filling; each round settles at least
// one queue or leaves the remainder unchanged, so it ends far sooner.
const maxShareRounds = 64

// deserve computes every queue's deserved resources from the schedulable
// total. The queues are in name order, so the float sums are reproducible.
func deserve(queues []*queueState, total []float64) {
	remaining := append([]float64(nil), total...)
	met := make([]bool, len(queues))
	old := make([]float64, len(total))
	for range maxShareRounds {
		var weights int64
		for i, q := range queues {
			if !met[i] {
				weights += int64(q.weight)
			}
		}
		if weights == 0 {
			break
		}
		increased := make([]float64, len(total))
		decreased := make([]float64, len(total))
		for i, q := range queues {
			if met[i] {
				continue
			}
			copy(old, q.deserved)
			portion := float64(q.weight) / float64(weights)
			for d := range q.deserved {
				v := q.deserved[d] + remaining[d]*portion
				q.deserved[d] = min(v, q.realCap[d], q.request[d])
			}
			if lessEqual(q.request, q.deserved) || equal(old, q.deserved) {
				met[i] = true
			}
			for d := range q.deserved {
				if diff := q.deserved[d] - old[d]; diff > 0 {
					increased[d] += diff
				} else {
					decreased[d] -= diff
				}
			}
		}
		changed, empty := false, true
		for d := range remaining {
			v := remaining[d] - increased[d] + decreased[d]
			if v != remaining[d] {
				changed = true
			}
			remaining[d] = v
			if v >= 1 {
				empty = false
			}
		}
		if empty || !changed {
			break
		}
	}
	for _, q := range queues {
		q.updateShare()
	}
}

func lessEqual(a, b []float64) bool {
	for d := range a {
		if a[d] > b[d]+settleEpsilon {
			return false
		}
	}
	return true
}

func equal(a, b []float64) bool {
	for d := range a {
		if a[d] != b[d] {
			return false
		}
	}
	return true
}

// updateShare recomputes allocated/deserved at its highest over resources.
// A resource deserved at zero but allocated counts as a full share.
func (q *queueState) updateShare() {
	share := 0.0
	for d, des := range q.deserved {
		if d == dimPods {
			continue
		}
		a := q.allocated[d]
		switch {
		case des > 0:
			share = max(share, a/des)
		case a > 0:
			share = max(share, 1)
		}
	}
	q.share = share
}

// overused: the queue holds at least its deserved amount of every resource
// (and deserves something; a queue asking for nothing but best-effort pods
// is never overused).
func (q *queueState) overused() bool {
	some := false
	for d, des := range q.deserved {
		if d == dimPods {
			continue
		}
		if des > 0 {
			some = true
		}
		if des > q.allocated[d]+settleEpsilon {
			return false
		}
	}
	return some
}

// roomFor says whether the queue may take req more without passing its
// deserved amount in any resource req asks for; when not, the first
// resource it would pass.
func (q *queueState) roomFor(req []int64) (bool, int) {
	for d, x := range req {
		if d == dimPods || x <= 0 {
			continue
		}
		if q.allocated[d]+float64(x) > q.deserved[d]+settleEpsilon {
			return false, d
		}
	}
	return true, -1
}

// tasksWithin is how many tasks asking for req each fit in the queue's room
// under its deserved amount, and the resource that limits them
// (math.MaxInt and -1 when req asks for nothing the queue counts).
func (q *queueState) tasksWithin(req []int64) (int, int) {
	n, limit := math.MaxInt, -1
	for d, x := range req {
		if d == dimPods || x <= 0 {
			continue
		}
		room := max(0, q.deserved[d]+settleEpsilon-q.allocated[d])
		if k := int(room / float64(x)); k < n {
			n, limit = k, d
		}
	}
	return n, limit
}

// fullReason says that the queue has no room left in resource d.
func (q *queueState) fullReason(d int, ix *resourceIndex) string {
	return fmt.Sprintf("queue %s would exceed its deserved %s (deserved %s, allocated %s)",
		q.name, ix.names[d], ix.format(d, q.deserved[d]), ix.format(d, q.allocated[d]))
}

func (q *queueState) add(req []int64, sign float64) {
	for d, x := range req {
		if d != dimPods {
			q.allocated[d] += sign * float64(x)
		}
	}
}
