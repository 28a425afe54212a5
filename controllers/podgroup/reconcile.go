package podgroup

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/shard"
)

// reconcile gives the pod at key its PodGroup: create it (AlreadyExists is success: the name
// is deterministic), then annotate the pod with its name.
func (c *Controller) reconcile(ctx context.Context, key string, _ request) error {
	pod := c.pod(key)
	if pod == nil {
		return nil // deleted, or bound: it left the watch
	}
	if why := Skip(pod, c.cfg.SchedulerNames); why != "" {
		return nil
	}
	var owners map[string]string
	if !c.cfg.SkipOwnerAnnotations {
		owners = c.ownerAnnotations(ctx, pod)
	}
	if why := MinMemberTooLarge(owners); why != "" {
		// Retrying cannot help: the owner must change, and its pods be made anew.
		c.Recorder.Event(pod, corev1.EventTypeWarning, state.ReasonTooLarge, "No PodGroup for this pod: "+why)
		return nil
	}
	pg := Build(pod, shard.SlotOf(key, c.cfg.Ownership.Slots()), owners)
	if err := c.Guard(ctx); err != nil {
		return err
	}
	_, err := c.cfg.Volcano.SchedulingV1beta1().PodGroups(pod.Namespace).Create(ctx, pg, metav1.CreateOptions{})
	switch {
	case err == nil:
		c.metrics.created.Inc()
		c.Log.Debug("podgroup created", "pod", key, "podgroup", pg.Name, "queue", pg.Spec.Queue)
	case apierrors.IsAlreadyExists(err):
		// An earlier try, another pod of the same owner, or a stale owner made it.
	case apierrors.IsInvalid(err):
		// The pod asks for something the API server refuses (a queue name that is no valid
		// name): retrying cannot help. Say so on the pod and move on.
		c.Recorder.Eventf(pod, corev1.EventTypeWarning, "PodGroupInvalid",
			"Cannot create PodGroup %s for this pod: %v", pg.Name, err)
		c.Log.Warn("podgroup refused by the API server", "pod", key, "podgroup", pg.Name, "error", err)
		return nil
	default:
		return fmt.Errorf("create podgroup %s/%s for pod %s: %w", pod.Namespace, pg.Name, pod.Name, err)
	}
	return c.annotate(ctx, pod, pg.Name)
}

// annotate sets the pod's group-name annotation. The patch carries the pod's UID and the
// resourceVersion it was read at, so it lands only on the pod as read: never on a pod
// re-created under the same name, never over a change made since.
func (c *Controller) annotate(ctx context.Context, pod *corev1.Pod, group string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":             pod.UID,
		"resourceVersion": pod.ResourceVersion,
		"annotations":     map[string]string{scheduling.KubeGroupNameAnnotationKey: group},
	}})
	if err != nil {
		return fmt.Errorf("annotate pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if err := c.Guard(ctx); err != nil {
		return err
	}
	_, err = c.cfg.Kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("annotate pod %s/%s with podgroup %s: %w", pod.Namespace, pod.Name, group, err)
	}
	return nil
}
