package queue

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// takeCommand deletes the Command behind req (UID precondition), so that it runs once
// (kit.Commands). It reports whether req's action is to run: false when another owner took the
// Command before.
func (c *Controller) takeCommand(ctx context.Context, name string, req request) (bool, error) {
	cmd := req.command
	run, took, err := c.taken.Take(ctx, c.cfg.Volcano, *cmd, c.guard)
	if err != nil || !took {
		return run, err
	}
	action := req.action
	if !knownAction(action) {
		action = "Unknown" // the label stays bounded whatever a Command says
	}
	c.metrics.commands.WithLabelValues(string(action)).Inc()
	c.Log.Debug("command taken", "queue", name, "command", cmd.String(), "action", req.action)
	if q, err := c.queues.Get(name); err == nil {
		if knownAction(req.action) {
			c.Recorder.Eventf(q, corev1.EventTypeNormal, string(bus.CommandIssuedEvent),
				"Start to execute command %s, and clean it up to make sure executed not more than once.", req.action)
		} else {
			c.Recorder.Eventf(q, corev1.EventTypeWarning, "UnknownCommandAction",
				"Command %s asks for action %q, which no Queue knows; it was removed and the queue synced", cmd, req.action)
		}
	}
	return true, nil
}
