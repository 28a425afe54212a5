package kit

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"
)

// CommandRef names one Command: enough to delete it and no other of its
// name.
type CommandRef struct {
	Namespace, Name string
	UID             types.UID
}

// RefOf is the CommandRef of cmd.
func RefOf(cmd *bus.Command) *CommandRef {
	return &CommandRef{Namespace: cmd.Namespace, Name: cmd.Name, UID: cmd.UID}
}

// String is namespace/name.
func (r CommandRef) String() string { return toolscache.NewObjectName(r.Namespace, r.Name).String() }

// TakenMemory is how long a taken Command is remembered: longer than any
// retry of the request that took it.
const TakenMemory = time.Hour

// Commands takes Volcano Commands so that each runs at most once, across
// retries and across replicas. Taking one deletes it with its UID as a
// precondition; the replica whose delete succeeds runs the action, and
// remembers that it took it. When a later try finds the Command gone (an
// earlier try of the same request failed after its delete), the action
// runs again only if this replica took it and has not run it yet (Forget): a
// Command an earlier owner of the slot took has run there, and its stale
// copy in this replica's cache must not run it again. Safe for concurrent
// use; the zero value is ready.
type Commands struct {
	taken Keyed[time.Time] // Command UID → when this replica took it
}

// Take deletes the Command ref names. run reports whether its action is to
// run; took, whether this call deleted it (the moment to record an Event or
// count it). guard, when set, is called right before the delete (the
// fencing check every write makes); its error is returned as is.
func (c *Commands) Take(ctx context.Context, vc vcclient.Interface, ref CommandRef, guard func(context.Context) error) (run, took bool, err error) {
	if guard != nil {
		if err := guard(ctx); err != nil {
			return false, false, err
		}
	}
	err = vc.BusV1alpha1().Commands(ref.Namespace).Delete(ctx, ref.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &ref.UID},
	})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone, or replaced by a new Command of the same name, which comes as its own event.
		return c.Took(ref.UID), false, nil
	case err != nil:
		return false, false, fmt.Errorf("delete command %s: %w", ref, err)
	}
	now := time.Now()
	c.taken.Set(string(ref.UID), now)
	c.taken.Prune(func(_ string, at time.Time) bool { return now.Sub(at) > TakenMemory })
	return true, true, nil
}

// Took reports whether this replica took the Command with uid (within
// TakenMemory).
func (c *Commands) Took(uid types.UID) bool {
	at, ok := c.taken.Get(string(uid))
	return ok && time.Since(at) <= TakenMemory
}

// Forget drops uid once the request that took the Command has run its
// action: from then on no request may run it again (Take reports run false),
// though other requests for the same Command (an informer's add, a gained
// slot's look at its Commands) may still be on their way.
func (c *Commands) Forget(uid types.UID) { c.taken.Forget(string(uid)) }
