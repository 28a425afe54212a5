package queue

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// targetsQueue reports whether a Command's target is a Queue: kind Queue, and the scheduling
// API group when the apiVersion is given (vcctl sets scheduling.volcano.sh/v1beta1).
func targetsQueue(ref *metav1.OwnerReference) bool {
	if ref == nil || ref.Kind != "Queue" || ref.Name == "" {
		return false
	}
	return ref.APIVersion == "" || strings.HasPrefix(ref.APIVersion, scheduling.GroupName+"/")
}

// knownAction reports whether a Queue knows the action; any other runs as a sync, as in Volcano.
func knownAction(a bus.Action) bool {
	return a == bus.OpenQueueAction || a == bus.CloseQueueAction || a == bus.SyncQueueAction
}

// takenCommands are the Commands this controller deleted, until the informer sees them go. A
// Command runs at most once: when its delete finds it gone, the action runs only if this
// controller took it (an earlier try of the same request failed after the delete); a Command
// some earlier owner of the slot took has been run by that owner, and its stale copy in this
// replica's informer must not run it again after a later Command.
type takenCommands struct {
	mu   sync.Mutex
	uids map[types.UID]bool
}

func (t *takenCommands) add(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.uids == nil {
		t.uids = map[types.UID]bool{}
	}
	t.uids[uid] = true
}

func (t *takenCommands) has(uid types.UID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.uids[uid]
}

func (t *takenCommands) forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.uids, uid)
}

// takeCommand deletes the Command behind req (UID precondition), so that it runs once, and
// records that it was taken. It reports whether req's action is to run: false when another
// owner took the Command before.
func (c *Controller) takeCommand(ctx context.Context, name string, req request) (bool, error) {
	cmd := req.command
	if err := c.guard(ctx); err != nil {
		return false, err
	}
	err := c.cfg.Volcano.BusV1alpha1().Commands(cmd.namespace).Delete(ctx, cmd.name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &cmd.uid},
	})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone (or replaced by a new Command of the same name, which comes as its own event).
		return c.taken.has(cmd.uid), nil
	case err != nil:
		return false, fmt.Errorf("delete command %s/%s: %w", cmd.namespace, cmd.name, err)
	}
	c.taken.add(cmd.uid)
	c.metrics.commands.WithLabelValues(string(req.action)).Inc()
	c.log.Debug("command taken", "queue", name, "command", cmd.namespace+"/"+cmd.name, "action", req.action)
	if q, err := c.queues.Get(name); err == nil {
		if knownAction(req.action) {
			c.recorder.Eventf(q, corev1.EventTypeNormal, string(bus.CommandIssuedEvent),
				"Start to execute command %s, and clean it up to make sure executed not more than once.", req.action)
		} else {
			c.recorder.Eventf(q, corev1.EventTypeWarning, "UnknownCommandAction",
				"Command %s/%s asks for action %q, which no Queue knows; it was removed and the queue synced", cmd.namespace, cmd.name, req.action)
		}
	}
	return true, nil
}
