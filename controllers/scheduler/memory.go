package scheduler

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// What a shift remembers between cycles, so that a cycle never decides on
// an informer that has not yet seen the shift's own writes.

// assumedPods are the pods this shift bound that the bound-pod informer does
// not show yet, by namespace/name. A cycle counts them on their node and in
// their PodGroup, and never places them again.
type assumedPods map[string]*assumedPod

type assumedPod struct {
	uid      types.UID
	node     string
	group    string // namespace/name of its PodGroup
	task     string
	requests corev1.ResourceList
	at       time.Time
}

// writtenGroups remembers each PodGroup a write returned, until the
// informer has caught up with it.
type writtenGroups map[string]writtenGroup

type writtenGroup struct {
	from string // the resourceVersion the write replaced
	pg   *vcv1beta1.PodGroup
}

func (w writtenGroups) remember(from string, pg *vcv1beta1.PodGroup) {
	w[pg.Namespace+"/"+pg.Name] = writtenGroup{from: from, pg: pg}
}

// latest returns the written PodGroup if the informer still holds the
// version it replaced, else the informer's.
func (w writtenGroups) latest(cached *vcv1beta1.PodGroup) *vcv1beta1.PodGroup {
	key := cached.Namespace + "/" + cached.Name
	if wg, ok := w[key]; ok {
		if wg.from == cached.ResourceVersion && wg.pg.UID == cached.UID {
			return wg.pg
		}
		delete(w, key)
	}
	return cached
}

// writeTimes is when this shift last wrote each PodGroup, by namespace/name:
// what moves with a PodGroup's pods waits Config.PodsQuiet from there. A
// PodGroup this shift has not written counts from the shift's start, so
// that a new holder of the scheduler does not rewrite every running
// PodGroup in its first cycle.
type writeTimes struct {
	start time.Time
	at    map[string]time.Time
}

func newWriteTimes(start time.Time) writeTimes {
	return writeTimes{start: start, at: map[string]time.Time{}}
}

func (w writeTimes) last(key string) time.Time {
	if t, ok := w.at[key]; ok {
		return t
	}
	return w.start
}

func (w writeTimes) wrote(key string, at time.Time) { w.at[key] = at }

// prune forgets the PodGroups that are gone.
func (w writeTimes) prune(groups map[string]*groupView) {
	for key := range w.at {
		if groups[key] == nil {
			delete(w.at, key)
		}
	}
}
