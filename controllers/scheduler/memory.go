package scheduler

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// What a shift remembers between cycles, so that a cycle never decides on
// an informer that has not yet seen the shift's own writes.

// assumedPods are the pods this shift bound that the bound-pod informer does
// not show yet, by namespace/name. A cycle counts them on their node and in
// their PodGroup, and never places them again.
type assumedPods map[string]*assumedPod

type assumedPod struct {
	pod      *corev1.Pod // as it was bound, for inter-pod affinity
	uid      types.UID
	node     string
	group    string // namespace/name of its PodGroup
	task     string
	requests corev1.ResourceList
	at       time.Time
}

// groupHistory is what a shift remembers of the PodGroup statuses it has
// to write, by namespace/name: when it last wrote each, and a status it is
// holding back with the time since it has stood as it is (see quiet.due).
// A PodGroup this shift has not written counts as written at the shift's
// start, so that a new holder of the scheduler does not rewrite every
// running PodGroup in its first cycles.
type groupHistory struct {
	start time.Time
	wrote map[string]time.Time
	held  map[string]heldStatus
}

// heldStatus is a status not written yet, as fingerprint gives it, and
// since when it has stood so.
type heldStatus struct {
	status string
	since  time.Time
}

func newGroupHistory(start time.Time) *groupHistory {
	return &groupHistory{start: start, wrote: map[string]time.Time{}, held: map[string]heldStatus{}}
}

func (h *groupHistory) lastWrite(key string) time.Time {
	if t, ok := h.wrote[key]; ok {
		return t
	}
	return h.start
}

// standing returns since when the PodGroup's held status has been status,
// now if it was another until now.
func (h *groupHistory) standing(key, status string, now time.Time) time.Time {
	if s, ok := h.held[key]; ok && s.status == status {
		return s.since
	}
	h.held[key] = heldStatus{status: status, since: now}
	return now
}

// settled: the PodGroup's status needs no write (any more).
func (h *groupHistory) settled(key string) { delete(h.held, key) }

func (h *groupHistory) written(key string, at time.Time) {
	h.wrote[key] = at
	delete(h.held, key)
}

// prune forgets the PodGroups that are gone.
func (h *groupHistory) prune(groups map[string]*groupView) {
	for key := range h.wrote {
		if groups[key] == nil {
			delete(h.wrote, key)
		}
	}
	for key := range h.held {
		if groups[key] == nil {
			delete(h.held, key)
		}
	}
}
