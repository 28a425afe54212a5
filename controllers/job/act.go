package job

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/build"
	"github.com/ringfire/ringfire/controllers/job/plan"
	"github.com/ringfire/ringfire/controllers/kit"
	"github.com/ringfire/ringfire/shard"
)

// The writes a plan (plan.Plan) asks for, each made the one way every
// controller makes it (kit.Create, kit.Delete, the Guard before each write).

// writePodGroup creates or updates the Job's PodGroup as the plan says.
func (c *Controller) writePodGroup(ctx context.Context, key string, job *batch.Job, p plan.Plan) error {
	if desired := p.CreatePodGroup; desired != nil {
		x := c.expected(c.slotOf(key), key, cache.PodGroups, desired)
		if err := c.createNamed(ctx, x, "podgroup", func(ctx context.Context) error {
			_, err := c.cfg.Volcano.SchedulingV1beta1().PodGroups(job.Namespace).Create(ctx, desired, metav1.CreateOptions{})
			return err
		}); err != nil {
			return err
		}
		c.warnMetadataCut(job)
	}
	if updated := p.UpdatePodGroup; updated != nil {
		if err := c.Guard(ctx); err != nil {
			return err
		}
		if _, err := c.cfg.Volcano.SchedulingV1beta1().PodGroups(job.Namespace).Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update podgroup %s: %w", updated.Name, err)
		}
	}
	return nil
}

// ReasonPodGroupMetadataCut is the reason of the Warning Event of a Job whose PodGroup was made
// without some of its labels or annotations (build.PodGroupMetadataBytes).
const ReasonPodGroupMetadataCut = "PodGroupMetadataCut"

// warnMetadataCut tells, once the Job's PodGroup is made, which of the Job's labels and
// annotations it does not carry, and why.
func (c *Controller) warnMetadataCut(job *batch.Job) {
	_, labels := build.BoundedMetadata(job.Labels)
	_, annotations := build.BoundedMetadata(job.Annotations)
	if labels+annotations == 0 {
		return
	}
	c.Recorder.Eventf(job, corev1.EventTypeWarning, ReasonPodGroupMetadataCut,
		"PodGroup made without %d of the Job's labels and %d of its annotations: a PodGroup carries at most %d bytes of each, those of volcano.sh domains first, then in key order; keep what the scheduler should read small",
		labels, annotations, build.PodGroupMetadataBytes)
}

// createPVCs creates the claims the plan asks for.
func (c *Controller) createPVCs(ctx context.Context, key string, job *batch.Job, pvcs []*corev1.PersistentVolumeClaim) error {
	slot := c.slotOf(key)
	for _, pvc := range pvcs {
		x := c.expected(slot, key, cache.PVCs, pvc)
		if err := c.createNamed(ctx, x, "pvc", func(ctx context.Context) error {
			_, err := c.cfg.Kube.CoreV1().PersistentVolumeClaims(job.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// createNamed creates, expected, an object whose name is the Job's alone (its PodGroup, its
// claims): AlreadyExists means the Job's own object, made before and not in the cache yet. It
// is expected again, as if this create had made it, so that no reconcile creates it again
// before the cache shows it, and counted as a create refused.
func (c *Controller) createNamed(ctx context.Context, x kit.Expected, what string, create func(context.Context) error) error {
	sent, err := kit.Create(ctx, c.Guard, x, create)
	switch {
	case err == nil:
		return nil
	case !sent:
		return err
	case apierrors.IsAlreadyExists(err):
		c.metrics.createsRefused.Inc()
		c.expectAgain(x)
		return nil
	}
	return fmt.Errorf("create %s %s: %w", what, x.Name, err)
}

// expectAgain expects the create of an object that exists already and is not in the cache
// yet, and looks at the Job again once that expectation would lapse: the plan that asked
// for the create made no wake-up for it, and the object's add is the only other thing that
// brings the Job back (it never comes if the object is one the cache does not show).
func (c *Controller) expectAgain(x kit.Expected) {
	x.ExpectCreate()
	c.wakeAfter(x.Key, c.cfg.Cache.Expectations().TTL())
}

// createPods creates pods, at most PodParallelism at once (kit.Parallel; not in slow-start
// batches: a Job's 10 pods in 1, 2, 4, 3 took four round trips where one does, and a burst of
// Jobs 28% longer to start); AlreadyExists counts as created, unless the pod there is another
// UID's (taken: the Job waits for its name).
// Each create is expected before it is issued, so that no reconcile issues it
// again before the cache has seen the pod.
func (c *Controller) createPods(ctx context.Context, key string, job *batch.Job, pods *plan.PodCreates) (taken []plan.Holder, err error) {
	slot := c.slotOf(key)
	var mu sync.Mutex
	errs := kit.Parallel(pods.Len(), c.cfg.PodParallelism, func(i int) error {
		// Built here, dropped when sent: at most PodParallelism built pods at once.
		p, err := pods.Build(i)
		if err != nil {
			return fmt.Errorf("build pod %s: %w", pods.Name(i), err)
		}
		x := c.expected(slot, key, cache.Pods, p)
		sent, err := kit.Create(ctx, c.Guard, x, func(ctx context.Context) error {
			_, err := c.cfg.Kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
			return err
		})
		switch {
		case err == nil:
			c.metrics.podsCreated.Inc()
		case !sent:
			return err
		case !apierrors.IsAlreadyExists(err):
			return fmt.Errorf("create pod %s: %w", p.Name, err)
		default:
			c.metrics.createsRefused.Inc()
			if h, other := c.podHolder(ctx, p, job.UID); other {
				mu.Lock() // nothing of this Job's is coming
				taken = append(taken, h)
				mu.Unlock()
				return nil
			}
			// The pod is this Job's (the names are deterministic), made before and not in
			// the cache yet: it is expected again, as if this create had made it, so that
			// no reconcile creates it again before the cache shows it (the job
			// controller's behaviour before kit.Create's policy).
			c.expectAgain(x)
		}
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		if !kit.IsTransient(err) { // a transient one is told once per wait (kit.Settings.OnWait)
			c.Recorder.Eventf(job, corev1.EventTypeWarning, "FailedCreatePod", "Error creating pods: %v", err)
		}
		return taken, err
	}
	return taken, nil
}

// deletePods deletes pods with UID and resourceVersion preconditions, a few
// at a time (the plan has only pods whose delete is not on its way already).
func (c *Controller) deletePods(ctx context.Context, key string, job *batch.Job, pods []*corev1.Pod) error {
	slot := c.slotOf(key)
	errs := kit.Parallel(len(pods), c.cfg.PodParallelism, func(i int) error {
		p := pods[i]
		x := c.expected(slot, key, cache.Pods, p)
		sent, err := kit.Delete(ctx, c.Guard, x, func(ctx context.Context) error {
			err := c.cfg.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: &p.UID, ResourceVersion: &p.ResourceVersion},
			})
			if apierrors.IsConflict(err) && c.goingAnyway(ctx, p) {
				err = nil // evicted or deleted by another hand meanwhile: what the kill wanted
			}
			return err
		})
		if err != nil {
			if !sent {
				return err
			}
			return fmt.Errorf("delete pod %s: %w", p.Name, err)
		}
		c.metrics.podsDeleted.Inc()
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		if !errors.Is(err, shard.ErrNotOwner) {
			c.Recorder.Eventf(job, corev1.EventTypeWarning, "FailedDeletePod", "Error deleting pods: %v", err)
		}
		return err
	}
	return nil
}

// goingAnyway reports whether a pod whose delete met a changed resource
// version is gone or being deleted already (an eviction, a node drain, a
// user), so that the kill need not be tried again, nor reported as failed.
// A pod changed otherwise (its status) is left to the next try, which
// decides on what it has become.
func (c *Controller) goingAnyway(ctx context.Context, p *corev1.Pod) bool {
	now, err := c.cfg.Kube.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	return err == nil && (now.UID != p.UID || now.DeletionTimestamp != nil)
}

// deletePodGroup deletes the Job's PodGroup (the plan has it only when no
// delete of it is on its way to the cache).
func (c *Controller) deletePodGroup(ctx context.Context, key string, pg *scheduling.PodGroup) error {
	x := c.expected(c.slotOf(key), key, cache.PodGroups, pg)
	sent, err := kit.Delete(ctx, c.Guard, x, func(ctx context.Context) error {
		return c.cfg.Volcano.SchedulingV1beta1().PodGroups(pg.Namespace).Delete(ctx, pg.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &pg.UID},
		})
	})
	if err != nil && sent {
		err = fmt.Errorf("delete podgroup %s: %w", pg.Name, err)
	}
	return err
}

// priorityOf values a PriorityClass from the cache.
func (c *Controller) priorityOf(name string) (int32, bool) {
	pc, err := c.cfg.Cache.PriorityClasses().Lister().Get(name)
	if err != nil {
		return 0, false
	}
	return pc.Value, true
}

// expected names the create or delete by the Job at key (of slot) of obj, a
// resource r, for kit.Create and kit.Delete.
func (c *Controller) expected(slot int, key string, r cache.Resource, obj metav1.Object) kit.Expected {
	return kit.Expected{Expectations: c.cfg.Cache.Expectations(), Slot: slot, Key: key, Resource: r,
		Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()}
}
