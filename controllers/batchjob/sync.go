package batchjob

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/batchjob/state"
	"github.com/ringfire/ringfire/controllers/kit"
	"github.com/ringfire/ringfire/shard"
)

// maxPodWrites bounds the pod creates, deletes and finalizer removals of one reconcile, as
// Kubernetes' Job controller bounds them; the rest come in the next one.
const maxPodWrites = 500

func (c *Controller) jobByKey(key string) (*batchv1.Job, error) {
	ns, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, err
	}
	job, err := c.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return job, err
}

// reconcile decides what a Job needs (state.Decide) from the cache, then writes it: its
// status first, then the pods' finalizers, deletes and creates. Nothing is written twice
// before the cache shows the first write: creates and deletes are expected
// (cache.Expectations) and the reconcile waits for them; the status written is remembered
// until the informer has it; finalizer removals are expected updates (kit.Update).
func (c *Controller) reconcile(ctx context.Context, key string, _ request) error {
	slots := c.cfg.Ownership.Slots()
	// read is the Job's pods as the API server gave them, when the cache may not show them
	// yet: its slot was just gained and only its pods are left to list (early), or it was
	// read so and the cache has not been seen to catch up since (caughtUp). readFor is the
	// Job they were read for, nil when the cache's pods are the ones to use.
	var read []*corev1.Pod
	var readFor *batchv1.Job
	if !c.cfg.Cache.Listed(key, slots) {
		// On a partial view the Job would make again what its last owner made: SlotsReady
		// enqueues the key once the slot's pods are listed.
		if read, readFor = c.early(ctx, key, slots); readFor == nil {
			return nil
		}
	} else if c.cfg.Cache.BatchReadEarly(key) {
		var err error
		if read, readFor, err = c.caughtUp(ctx, key); err != nil {
			return err
		}
	}
	fromServer := readFor != nil
	slot := shard.SlotOf(key, slots)
	cached, err := c.jobByKey(key)
	if err != nil {
		return err
	}
	if fromServer && (cached == nil || cached.UID != readFor.UID) {
		// Deleted, or deleted and made again, since its pods were read: those pods are not
		// this Job's. Its next look reads again.
		c.WakeAfter(key, request{}, time.Second)
		return nil
	}
	if cached == nil || !managed(cached) {
		// The Job is gone (or was never ringfire's): free its pods of the finalizer, so that
		// the garbage collector can delete them.
		pods, err := c.podsOf(key)
		if err != nil {
			return err
		}
		return c.removeFinalizers(ctx, slot, key, withFinalizer(pods))
	}
	job := c.written.Latest(key, cached)
	// Expectations first, then the pods: a create seen between the two would otherwise be
	// missing from the pods read and no longer pending, and be made again. (Pods read from
	// the API server hold every create this replica made for the Job: its reconciles run one
	// at a time, and the read is a consistent one made after the last returned.)
	podsNow := func() ([]*corev1.Pod, error) { return c.podsOf(key) }
	if fromServer {
		podsNow = func() ([]*corev1.Pod, error) { return read, nil }
	}
	if wait, pending := c.pendingPodWrites(slot, key, podsNow); pending {
		c.WakeAfter(key, request{}, wait)
		return nil
	}
	pods, err := podsNow()
	if err != nil {
		return err
	}
	own := ownedBy(pods, job.UID)
	var orphans []*corev1.Pod
	if len(own) < len(pods) {
		// Pods of an earlier Job of the same name, deleted and made again: nothing counts them
		// any more; free them for the garbage collector.
		var stale []*corev1.Pod
		for _, p := range withFinalizer(pods) {
			if !slices.Contains(own, p) {
				stale = append(stale, p)
			}
		}
		orphans = stale
	}
	backoff, _ := c.backoff.Get(key)
	d := state.Decide(state.Input{Job: job, Pods: own, Now: c.clock.Now(), Backoff: backoff})
	c.backoff.Set(key, d.Backoff)

	if d.Status != nil {
		if err := c.writeStatus(ctx, key, job, d.Status); err != nil {
			return err
		}
	}
	for _, ev := range d.Events {
		c.Recorder.Event(job, ev.Type, ev.Reason, ev.Message)
	}
	if err := c.removeFinalizers(ctx, slot, key, append(slices.Clone(d.RemoveFinalizers), orphans...)); err != nil {
		return err
	}
	if err := c.deletePods(ctx, slot, key, job, d.Delete); err != nil {
		return err
	}
	if err := c.createPods(ctx, slot, key, job, d); err != nil {
		return err
	}
	if d.RequeueAfter > 0 {
		c.WakeAfter(key, request{}, d.RequeueAfter)
	}
	return nil
}

// podsOf returns the pods of the held slots that a batch/v1 Job named key controls.
func (c *Controller) podsOf(key string) ([]*corev1.Pod, error) {
	objs, err := c.pods.Indexer().ByIndex(cache.ByBatchJob, key)
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ownedBy keeps the pods whose controller reference names the Job's UID: a pod of an older
// Job of the same name is not this one's.
func ownedBy(pods []*corev1.Pod, uid types.UID) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == uid {
			out = append(out, p)
		}
	}
	return out
}

func withFinalizer(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if slices.Contains(p.Finalizers, state.TrackingFinalizer) {
			out = append(out, p)
		}
	}
	return out
}

// pendingPodWrites reports whether a create or delete of the Job's pods is not in the cache
// yet, and how long to wait for it at most; podsNow gives the pods whose deletes are looked
// at, as the reconcile sees them (the cache's, or those read from the API server).
func (c *Controller) pendingPodWrites(slot int, key string, podsNow func() ([]*corev1.Pod, error)) (time.Duration, bool) {
	expect := c.cfg.Cache.Expectations()
	wait, pending := expect.CreatingAny(slot, key, cache.Pods)
	// The pods this reads may lag the ones read after it: a pod whose delete is pending is
	// in both until the delete is seen (it leaves the index before its expectation goes).
	pods, err := podsNow()
	if err != nil {
		return time.Second, true
	}
	for _, p := range pods {
		if left, ok := expect.Deleting(slot, key, cache.Pods, p.Namespace, p.Name, p.UID); ok {
			wait, pending = max(wait, left), true
		}
	}
	return wait, pending
}

// writeStatus updates the Job's status from the version it was decided on; a conflict is
// retried by the dispatcher on the newer version the informer brings.
func (c *Controller) writeStatus(ctx context.Context, key string, job *batchv1.Job, status *batchv1.JobStatus) error {
	if err := c.Guard(ctx); err != nil {
		return err
	}
	next := job.DeepCopy()
	next.Status = *status
	got, err := c.cfg.Kube.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update status of job %s: %w", key, err)
	}
	c.written.Remember(key, job.ResourceVersion, got)
	return nil
}

// removeFinalizers takes the tracking finalizer off pods, each once until the cache shows it
// gone (an expected update, kit.Update, met when the cached pod has no finalizer left).
func (c *Controller) removeFinalizers(ctx context.Context, slot int, key string, pods []*corev1.Pod) error {
	expect := c.cfg.Cache.Expectations()
	var errs []error
	n := 0
	for _, p := range pods {
		x := kit.Expected{Expectations: expect, Slot: slot, Key: key, Resource: cache.Pods, Namespace: p.Namespace, Name: p.Name, UID: p.UID}
		if _, pending := x.Updating(); pending {
			continue
		}
		if n == maxPodWrites {
			c.WakeAfter(key, request{}, time.Second)
			break
		}
		n++
		patch := fmt.Sprintf(`{"metadata":{"$deleteFromPrimitiveList/finalizers":[%q],"uid":%q}}`, state.TrackingFinalizer, p.UID)
		sent, err := kit.Update(ctx, c.Guard, x, unfinalized, func(ctx context.Context) error {
			_, err := c.cfg.Kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		})
		switch {
		case !sent:
			return err
		case err == nil, apierrors.IsConflict(err):
			// Done, gone already (NotFound), or another pod of the same name (Conflict):
			// nothing of this one left to free.
		default:
			errs = append(errs, fmt.Errorf("remove the tracking finalizer of pod %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	return errors.Join(errs...)
}

// unfinalized reports whether the pod carries the tracking finalizer no more: what meets the
// expected update of removeFinalizers.
func unfinalized(pod metav1.Object) bool {
	return !slices.Contains(pod.GetFinalizers(), state.TrackingFinalizer)
}

// deletePods deletes pods with their UID as precondition, expecting each delete.
func (c *Controller) deletePods(ctx context.Context, slot int, key string, job *batchv1.Job, pods []*corev1.Pod) error {
	expect := c.cfg.Cache.Expectations()
	var errs []error
	var deleted []string
	defer func() { c.podsEvent(job, "SuccessfulDelete", "Deleted", deleted) }()
	for i, p := range pods {
		if i == maxPodWrites {
			c.WakeAfter(key, request{}, time.Second)
			break
		}
		x := kit.Expected{Expectations: expect, Slot: slot, Key: key, Resource: cache.Pods, Namespace: p.Namespace, Name: p.Name, UID: p.UID}
		var gone bool // deleted by this call, not found gone: only those are told in the Event
		sent, err := kit.Delete(ctx, c.Guard, x, func(ctx context.Context) error {
			err := c.cfg.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
			gone = err == nil
			return err
		})
		switch {
		case !sent:
			return err
		case gone:
			deleted = append(deleted, p.Name)
		case err == nil, apierrors.IsConflict(err):
			// Gone already (NotFound), or another pod of the same name (Conflict): nothing
			// of this one left to delete. kit.Delete forgot the expectation of a Conflict and
			// keeps that of a NotFound for the cache to see the pod go.
		default:
			errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	return errors.Join(errs...)
}

// createPods creates the pods in slow-start batches of 1, 2, 4, ... (kit.SlowStart: a Job
// whose pods are refused stops at the first batch), each under a name chosen here, as the API server
// would choose it from the generate name, so that the create is expected by name.
func (c *Controller) createPods(ctx context.Context, slot int, key string, job *batchv1.Job, d state.Decision) error {
	expect := c.cfg.Cache.Expectations()
	indexes := d.Create[:min(len(d.Create), maxPodWrites)]
	var created []string
	defer func() { slices.Sort(created); c.podsEvent(job, "SuccessfulCreate", "Created", created) }()
	var mu sync.Mutex
	errs, _ := kit.SlowStart(len(indexes), kit.DefaultPodParallelism, func(i int) error {
		pod := d.PodFor(job, indexes[i]) // with its index's failure counts (backoffLimitPerIndex)
		// The expectation is keyed by namespace and name: both as the cache will see them.
		pod.Namespace, pod.Name = job.Namespace, generatedName(pod.GenerateName)
		pod.GenerateName = ""
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[shard.SlotLabel] = strconv.Itoa(slot)
		x := kit.Expected{Expectations: expect, Slot: slot, Key: key, Resource: cache.Pods, Namespace: pod.Namespace, Name: pod.Name}
		var got *corev1.Pod
		sent, err := kit.Create(ctx, c.Guard, x, func(ctx context.Context) (err error) {
			got, err = c.cfg.Kube.CoreV1().Pods(job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
			return err
		})
		if !sent {
			return err
		}
		if err != nil {
			// A name taken (kit.Create forgot its expectation): the next reconcile picks
			// another. A transient error is told once per wait (kit.Settings.OnWait), not
			// per retry.
			if !apierrors.IsAlreadyExists(err) && !kit.IsTransient(err) {
				c.Recorder.Eventf(job, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
			}
			return fmt.Errorf("create a pod of job %s: %w", key, err)
		}
		mu.Lock()
		created = append(created, got.Name)
		mu.Unlock()
		return nil
	})
	return errors.Join(errs...)
}

// eventPodNames is how many pod names one Event lists before "and N more".
const eventPodNames = 20

// podsEvent records one Normal Event for the pods one reconcile created or deleted, in
// Kubernetes' words for one pod ("Created pod: x") and listing them for more ("Created pods:
// x, y, z"): Kubernetes' Job controller records an Event per pod, which a burst of Jobs turns
// into most of the controller's writes (and its recorder then drops); one per reconcile keeps
// every pod named at a fraction of the writes.
func (c *Controller) podsEvent(job *batchv1.Job, reason, verb string, names []string) {
	switch {
	case len(names) == 0:
	case len(names) == 1:
		c.Recorder.Eventf(job, corev1.EventTypeNormal, reason, "%s pod: %v", verb, names[0])
	case len(names) <= eventPodNames:
		c.Recorder.Eventf(job, corev1.EventTypeNormal, reason, "%s pods: %s", verb, strings.Join(names, ", "))
	default:
		c.Recorder.Eventf(job, corev1.EventTypeNormal, reason, "%s pods: %s and %d more", verb,
			strings.Join(names[:eventPodNames], ", "), len(names)-eventPodNames)
	}
}

// generatedName appends five random characters to base, cut so that the name fits 63, as the
// API server does for a generate name.
func generatedName(base string) string {
	const maxName, suffix = 63, 5
	if len(base) > maxName-suffix {
		base = base[:maxName-suffix]
	}
	return base + utilrand.String(suffix)
}
