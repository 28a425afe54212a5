package queue

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// reconcile handles one request of the queue name: take its Command, read the queue and count
// its PodGroups, follow its parent, decide the state, keep its marks (the has-children,
// not-open and at-max-depth labels, the closed-by-parent annotation, spec.parent), write the
// status if it changed. The marks are written first: a queue about to close is labelled
// not-open before its state says Closed, so that the admission policy never sees a closed
// queue without the label.
func (c *Controller) reconcile(ctx context.Context, name string, req request) error {
	err := c.reconcileQueue(ctx, name, req)
	if err == nil && req.command != nil {
		// The Command is done with once the request that took it has
		// succeeded; a retry after a failure still runs it (kit.Commands).
		c.taken.Forget(req.command.UID)
	}
	return err
}

// reconcileQueue is reconcile's work.
func (c *Controller) reconcileQueue(ctx context.Context, name string, req request) error {
	action := req.action
	if req.command != nil {
		current, err := c.commandTarget(ctx, name, req.target)
		if err != nil {
			return err
		}
		stale := current != nil && StaleCommand(req.target, current.UID)
		run, err := c.takeCommand(ctx, name, req, current, stale)
		if err != nil {
			return err
		}
		if !run || current == nil || stale {
			action = "" // an earlier owner ran it, no queue has the name, or it is for an earlier queue of the name
		}
	}
	cached, err := c.queues.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get queue %s: %w", name, err)
	}
	queue := c.written.Latest(cached.Name, cached)
	counts := c.counts.get(name)
	parent := c.parent(queue)
	if why := Refusal(name, action); why != "" {
		c.Recorder.Event(queue, corev1.EventTypeWarning, string(action), why)
		action = ""
	}
	if action == bus.OpenQueueAction {
		if why := OpenRefusal(queue, parent); why != "" {
			c.Recorder.Event(queue, corev1.EventTypeWarning, string(action), why)
			action = ""
		}
	}
	byParent := false
	if action == "" {
		action = FollowParent(queue, parent)
		byParent = action != ""
	}
	state := NextState(queue.Status.State, action, counts.Total)
	if queue, err = c.writeMarks(ctx, queue, c.marks(queue, action, byParent, state)); err != nil || queue == nil {
		return err
	}
	status := DesiredStatus(queue.Status, state, counts)
	if equality.Semantic.DeepEqual(status, queue.Status) {
		return nil
	}
	if state == queue.Status.State {
		if wait := c.pace.Wait(name, time.Now()); wait > 0 {
			c.WakeAfter(name, request{}, wait)
			return nil
		}
	}
	return c.writeStatus(ctx, queue, status, action)
}

// writeStatus writes status over the queue as read: the update carries the resourceVersion it
// was computed from, so a write from a stale view, or a stale owner, fails and is retried.
func (c *Controller) writeStatus(ctx context.Context, queue *scheduling.Queue, status scheduling.QueueStatus, action bus.Action) error {
	if err := c.Guard(ctx); err != nil {
		return err
	}
	updated := queue.DeepCopy()
	updated.Status = status
	got, err := c.cfg.Volcano.SchedulingV1beta1().Queues().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("update status of queue %s: %w", queue.Name, err)
	}
	c.written.Remember(got.Name, queue.ResourceVersion, got)
	c.pace.Wrote(queue.Name, time.Now())
	c.metrics.statusWrites.Inc()
	from, to := queue.Status.State, status.State
	if from == to {
		return nil
	}
	c.metrics.transitions.WithLabelValues(string(to)).Inc()
	c.Log.Info("queue state changed", "queue", queue.Name, "from", from, "to", to, "action", action)
	switch action {
	case bus.OpenQueueAction:
		c.Recorder.Event(got, corev1.EventTypeNormal, string(action), "Open queue succeed")
	case bus.CloseQueueAction:
		c.Recorder.Event(got, corev1.EventTypeNormal, string(action), "Close queue succeed")
	}
	return nil
}
