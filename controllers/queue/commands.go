package queue

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// TargetsQueue reports whether a Command's target is a Queue: kind Queue, a name, and the
// scheduling API group when the apiVersion is given (vcctl sets scheduling.volcano.sh/v1beta1).
// The admission policy ringfire-queue-command (deploy/crds) matches the same Commands.
func TargetsQueue(ref *metav1.OwnerReference) bool {
	if ref == nil || ref.Kind != "Queue" || ref.Name == "" {
		return false
	}
	return ref.APIVersion == "" || strings.HasPrefix(ref.APIVersion, scheduling.GroupName+"/")
}

// knownAction reports whether a Queue knows the action; any other runs as a sync, as in Volcano.
func knownAction(a bus.Action) bool {
	return a == bus.OpenQueueAction || a == bus.CloseQueueAction || a == bus.SyncQueueAction
}

// StaleCommand reports whether a Command made for the queue of UID target is not for the queue
// of UID current, which now has the name: one deleted and made again. A Command that names no
// UID is for whichever queue has the name, as in Volcano.
func StaleCommand(target, current types.UID) bool {
	return target != "" && target != current
}

// commandTarget is the queue of name a Command made for the queue of UID target finds now: the
// cached one, unless the Command names a UID the cache does not hold; then the API server says
// which queue has the name (nil when none has). A Command for a queue this replica has not seen
// yet (made a moment ago) is an error, so that it is tried again once the cache has the queue.
func (c *Controller) commandTarget(ctx context.Context, name string, target types.UID) (*scheduling.Queue, error) {
	cached, err := c.queues.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get queue %s: %w", name, err)
	}
	if cached != nil && !StaleCommand(target, cached.UID) {
		return cached, nil
	}
	if target == "" {
		return nil, nil
	}
	live, err := c.cfg.Volcano.SchedulingV1beta1().Queues().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get queue %s: %w", name, err)
	case live.UID == target:
		return nil, fmt.Errorf("a Command is for queue %s of uid %s, which this replica has not seen yet", name, target)
	}
	return live, nil
}

// takeCommand deletes the Command behind req (UID precondition), so that it runs once
// (kit.Commands), and tells it on queue, the queue of the name now (nil when there is none): a
// CommandIssued Event, or a Warning when the Command is stale (made for an earlier queue of the
// name, StaleCommand) or its action unknown. It reports whether req's action is to run: false
// when another owner took the Command before.
func (c *Controller) takeCommand(ctx context.Context, name string, req request, queue *scheduling.Queue, stale bool) (bool, error) {
	cmd := req.command
	run, took, err := c.taken.Take(ctx, c.cfg.Volcano, *cmd, c.Guard)
	if err != nil || !took {
		return run, err
	}
	action := req.action
	if !knownAction(action) {
		action = "Unknown" // the label stays bounded whatever a Command says
	}
	c.metrics.commands.WithLabelValues(string(action)).Inc()
	c.Log.Debug("command taken", "queue", name, "command", cmd.String(), "action", req.action, "stale", stale)
	switch {
	case queue == nil: // no queue has the name: nothing to tell it on
	case stale:
		c.Recorder.Eventf(queue, corev1.EventTypeWarning, StaleCommandReason,
			"Command %s was made for an earlier queue %s (uid %s), not this one (uid %s): it was removed and its %s not applied",
			cmd, name, req.target, queue.UID, req.action)
	case knownAction(req.action):
		c.Recorder.Eventf(queue, corev1.EventTypeNormal, string(bus.CommandIssuedEvent),
			"Start to execute command %s, and clean it up to make sure executed not more than once.", req.action)
	default:
		c.Recorder.Eventf(queue, corev1.EventTypeWarning, "UnknownCommandAction",
			"Command %s asks for action %q, which no Queue knows; it was removed and the queue synced", cmd, req.action)
	}
	return true, nil
}

// StaleCommandReason is the reason of the Warning Event on a queue whose name a stale Command
// names (StaleCommand).
const StaleCommandReason = "StaleCommand"
