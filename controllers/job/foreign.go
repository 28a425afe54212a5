package job

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/plan"
	"github.com/ringfire/ringfire/controllers/job/plugins"
	"github.com/ringfire/ringfire/controllers/job/state"
)

// A Job deleted and made again under its name is a new Job, with a new UID. Its pods
// (<job>-<task>-<index>) and its plugins' objects (named after the Job) have the names of the
// earlier Job's, which the garbage collector deletes in its own time: later still when the
// delete did not wait (kubectl delete --wait=false) or a finalizer holds them. Such an object
// is not the Job's: it is never counted, reused or updated, and not deleted by the Job either
// (that is the collector's work). The Job waits for the name, tells once what it waits for, and
// looks again when the object is deleted.

// ReasonWaitingForDeletion is the reason of the Normal Event that tells what a Job waits for.
const ReasonWaitingForDeletion = plan.ReasonWaitingForDeletion

// recheckForeign is how soon a Job looks again at a name held by an object the cache does not
// hold (one without this replica's slot label), whose delete no event reports.
const recheckForeign = 30 * time.Second

// waitForNames records that the Job at key waits for the names held (none: it waits for
// nothing): a Normal Event when the wait begins or comes to another holder, not on every
// reconcile; a look after recheckForeign when a holder's delete will not be seen.
func (c *Controller) waitForNames(key string, job *batch.Job, held []plan.Holder) {
	if len(held) == 0 {
		c.memory.waiting.change(key, "")
		return
	}
	// One object may be asked for twice (a plugin's add and update both apply its ConfigMap).
	distinct := held[:0:0]
	named := map[string]bool{}
	stories := make([]string, 0, len(held))
	seen := map[string]bool{}
	recheck := false
	for _, h := range held {
		if named[h.Kind+"/"+h.Name] {
			continue
		}
		named[h.Kind+"/"+h.Name] = true
		distinct = append(distinct, h)
		if s := h.Story(); !seen[s] {
			seen[s] = true
			stories = append(stories, s)
		}
		recheck = recheck || !h.Cached
	}
	held = distinct
	if c.memory.waiting.change(key, strings.Join(stories, "\x01")) {
		msg := plan.WaitMessage(job, held)
		c.Log.Info("job waits for a name", "job", key, "uid", job.UID, "message", msg)
		c.Recorder.Event(job, corev1.EventTypeNormal, ReasonWaitingForDeletion, msg)
	}
	if recheck {
		c.wakeAfter(key, recheckForeign)
	}
}

// onForeignDelete wakes the Job of an object's name when the object, controlled by another
// UID than the cached Job's, leaves the cache: the Job may be waiting for its name. The
// deletes of the Job's own plugin objects (a kill) wake nothing.
func (c *Controller) onForeignDelete(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	key, ok := cache.JobKey(obj)
	if !ok {
		return
	}
	if job, ok, _ := c.cfg.Cache.Job(key); ok && !cache.ControlledBy(m, job.UID) {
		c.Disp.Enqueue(key, request{Request: state.Request{Event: bus.OutOfSyncEvent}})
	}
}

// podHolder reads the pod that refused a create of pod as AlreadyExists and returns it as a
// holder when another UID controls it. A pod it cannot read is taken as the Job's (as before:
// the create's expectation holds it until the cache shows it).
func (c *Controller) podHolder(ctx context.Context, pod *corev1.Pod, uid types.UID) (plan.Holder, bool) {
	got, err := c.cfg.Kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil || cache.ControlledBy(got, uid) {
		return plan.Holder{}, false
	}
	return plan.HolderOf("pod", got, false), true
}

// pluginHolder is podHolder for a plugin object.
func (c *Controller) pluginHolder(ctx context.Context, obj plugins.Object, uid types.UID) (plan.Holder, bool) {
	got, err := c.get(ctx, obj)
	if err != nil || cache.ControlledBy(got, uid) {
		return plan.Holder{}, false
	}
	return plan.HolderOf(kindOf(obj), got, false), true
}

// get reads the plugin object of obj's kind, namespace and name from the API server.
func (c *Controller) get(ctx context.Context, obj plugins.Object) (plugins.Object, error) {
	ns, name, opts := obj.GetNamespace(), obj.GetName(), metav1.GetOptions{}
	switch obj.(type) {
	case *corev1.Service:
		return c.cfg.Kube.CoreV1().Services(ns).Get(ctx, name, opts)
	case *corev1.ConfigMap:
		return c.cfg.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name, opts)
	case *corev1.Secret:
		return c.cfg.Kube.CoreV1().Secrets(ns).Get(ctx, name, opts)
	case *networkingv1.NetworkPolicy:
		return c.cfg.Kube.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, opts)
	}
	_, err := resourceOf(obj)
	return nil, err
}

// kindOf names a plugin object's kind for a message.
func kindOf(obj plugins.Object) string {
	switch obj.(type) {
	case *corev1.Service:
		return "Service"
	case *corev1.ConfigMap:
		return "ConfigMap"
	case *corev1.Secret:
		return "Secret"
	case *networkingv1.NetworkPolicy:
		return "NetworkPolicy"
	}
	return fmt.Sprintf("%T", obj)
}
