package plan

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// ReasonWaitingForDeletion is the reason of the Normal Event that tells what a Job waits for.
const ReasonWaitingForDeletion = "WaitingForDeletion"

// Holder is an object that holds a name the Job needs and that another UID, or nobody,
// controls.
type Holder struct {
	Kind   string // "pod", "Service", ...
	Name   string
	Owner  *metav1.OwnerReference // its controller; nil for none
	Cached bool                   // in the cache: its delete wakes the Job
}

// HolderOf is obj, of kind, as a Holder; cached tells whether the cache holds it.
func HolderOf(kind string, obj metav1.Object, cached bool) Holder {
	h := Holder{Kind: kind, Name: obj.GetName(), Cached: cached}
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		r := *ref
		h.Owner = &r
	}
	return h
}

// Story is what one wait is: the kind of object and whose it is. The earlier Job's pods
// going one by one are one wait, told once.
func (h Holder) Story() string {
	owner := "none"
	if h.Owner != nil {
		owner = string(h.Owner.UID)
	}
	return h.Kind + "\x00" + owner
}

// WaitMessage says what job waits for: the first of held, and how many more.
func WaitMessage(job *batch.Job, held []Holder) string {
	h := held[0]
	var msg string
	switch {
	case h.Owner != nil && h.Owner.Kind == "Job" && h.Owner.Name == job.Name:
		msg = fmt.Sprintf("waiting for %s %s of an earlier Job %s (uid %s) to be deleted by the garbage collector",
			h.Kind, h.Name, job.Name, h.Owner.UID)
	case h.Owner != nil:
		msg = fmt.Sprintf("waiting for %s %s, controlled by %s %s (uid %s), to be deleted: this Job needs its name",
			h.Kind, h.Name, h.Owner.Kind, h.Owner.Name, h.Owner.UID)
	default:
		msg = fmt.Sprintf("waiting for %s %s, which no controller owns, to be deleted: this Job needs its name", h.Kind, h.Name)
	}
	if len(held) > 1 {
		msg += fmt.Sprintf(" (and %d more objects)", len(held)-1)
	}
	return msg
}
