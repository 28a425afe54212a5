package job

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/build"
	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/controllers/kit"
	"github.com/ringfire/ringfire/shard"
)

// podCounts are a Job's pods by phase after a kill or a sync, overall and
// per task.
type podCounts struct {
	state.Counts
	tasks map[string]batch.TaskState
}

func (pc *podCounts) add(task string, phase corev1.PodPhase) {
	switch phase {
	case corev1.PodPending:
		pc.Pending++
	case corev1.PodRunning:
		pc.Running++
	case corev1.PodSucceeded:
		pc.Succeeded++
	case corev1.PodFailed:
		pc.Failed++
	default:
		pc.Unknown++
	}
	if pc.tasks == nil {
		pc.tasks = map[string]batch.TaskState{}
	}
	ts := pc.tasks[task]
	if ts.Phase == nil {
		ts.Phase = map[corev1.PodPhase]int32{}
	}
	ts.Phase[phase]++
	pc.tasks[task] = ts
	if pc.TaskSucceeded == nil {
		pc.TaskSucceeded = map[string]int32{}
	}
	if phase == corev1.PodSucceeded {
		pc.TaskSucceeded[task]++
	} else if _, ok := pc.TaskSucceeded[task]; !ok {
		pc.TaskSucceeded[task] = 0
	}
}

// countPods counts the Job's pods as they are.
func countPods(_ *batch.Job, info *cache.JobInfo) podCounts {
	var pc podCounts
	for task, pods := range info.Pods {
		for _, p := range pods {
			if p.DeletionTimestamp != nil {
				pc.Terminating++
				continue
			}
			pc.add(task, p.Status.Phase)
		}
	}
	return pc
}

// kill deletes the pods the kill targets and counts the rest; a full kill
// deletes the PodGroup too, so that the scheduler admits the Job afresh. It
// reports whether the kill ends pods of the Job's current version (or issued
// a delete): only then does it start a new version. A kill that finds nothing
// of the current version left (a finished Job looked at again, a restart
// waiting for the pods of the old version to go) starts none; a kill retried
// because its status write failed, whose deletes went out the first time,
// still does, so that the deleted pods' events stay those of an old version.
func (c *Controller) kill(ctx context.Context, key string, job *batch.Job, info *cache.JobInfo, kill state.Kill, req state.Request) (podCounts, bool, error) {
	var pc podCounts
	var doomed []*corev1.Pod
	partition := partitionOf(info, req)
	current := false // a pod of the current version goes
	for task, pods := range info.Pods {
		for _, p := range pods {
			if p.DeletionTimestamp != nil {
				pc.Terminating++
				current = current || ofVersion(p, job.Status.Version)
				continue
			}
			if targets(kill, p, task, req, partition) {
				doomed = append(doomed, p)
				current = current || ofVersion(p, job.Status.Version)
				continue
			}
			pc.add(task, p.Status.Phase)
		}
	}
	deleted, issued, err := c.deletePods(ctx, key, job, doomed)
	issued = issued || current
	pc.Terminating += deleted
	if err != nil {
		return pc, issued, err
	}
	if kill.Full() && info.PodGroup != nil {
		pgIssued, err := c.deletePodGroup(ctx, key, info.PodGroup)
		issued = issued || pgIssued
		if err != nil {
			return pc, issued, err
		}
	}
	if kill.Full() {
		// The plugins' objects go with a full kill. A plugin set that cannot be built (a
		// plugin name or argument that is wrong) cannot say which those are: the kill is
		// not done, and the error is reported and retried like any other, as in Volcano.
		set, err := c.pluginsFor(job, c.slotOf(key))
		if err != nil {
			return pc, issued, c.pluginFailed(job, "job plugins", err)
		}
		if err := c.deletePluginObjects(ctx, key, job, set); err != nil {
			return pc, issued, c.pluginFailed(job, "job plugins on kill", err)
		}
	}
	return pc, issued, nil
}

// deletePodGroup deletes the Job's PodGroup, unless a delete of it is already
// on its way to the cache.
func (c *Controller) deletePodGroup(ctx context.Context, key string, pg *scheduling.PodGroup) (issued bool, err error) {
	x := c.expected(c.slotOf(key), key, cache.PodGroups, pg)
	if _, pending := x.Deleting(); pending {
		return false, nil
	}
	sent, err := kit.Delete(ctx, c.Guard, x, func(ctx context.Context) error {
		return c.cfg.Volcano.SchedulingV1beta1().PodGroups(pg.Namespace).Delete(ctx, pg.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &pg.UID},
		})
	})
	if err != nil && sent {
		err = fmt.Errorf("delete podgroup %s: %w", pg.Name, err)
	}
	return sent, err
}

// targets reports whether the kill deletes pod p of task.
func targets(kill state.Kill, p *corev1.Pod, task string, req state.Request, partition string) bool {
	switch kill {
	case state.KillTask:
		return task == req.TaskName
	case state.KillPod:
		return p.Name == req.PodName
	case state.KillPartition:
		return task == req.TaskName && partition != "" && p.Labels[batch.TaskPartitionID] == partition
	}
	return kill.Deletes(p.Status.Phase)
}

// partitionOf is the partition of the request's pod, if it has one.
func partitionOf(info *cache.JobInfo, req state.Request) string {
	if p := info.Pods[req.TaskName][req.PodName]; p != nil {
		return p.Labels[batch.TaskPartitionID]
	}
	return ""
}

// deletePods deletes pods with UID and resourceVersion preconditions, a few
// at a time; it returns how many are gone or going, and whether it issued a
// delete. A pod whose delete was issued before and that the cache still shows
// is not deleted again.
func (c *Controller) deletePods(ctx context.Context, key string, job *batch.Job, pods []*corev1.Pod) (int32, bool, error) {
	slot := c.slotOf(key)
	var mu sync.Mutex
	var gone int32
	var issued bool
	errs := c.parallel(len(pods), func(i int) error {
		p := pods[i]
		x := c.expected(slot, key, cache.Pods, p)
		if _, pending := x.Deleting(); pending {
			mu.Lock()
			gone++
			mu.Unlock()
			return nil // the cache will see it go
		}
		sent, err := kit.Delete(ctx, c.Guard, x, func(ctx context.Context) error {
			err := c.cfg.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: &p.UID, ResourceVersion: &p.ResourceVersion},
			})
			if apierrors.IsConflict(err) && c.goingAnyway(ctx, p) {
				err = nil // evicted or deleted by another hand meanwhile: what the kill wanted
			}
			return err
		})
		if sent {
			mu.Lock()
			issued = true
			mu.Unlock()
		}
		if err != nil {
			if !sent {
				return err
			}
			return fmt.Errorf("delete pod %s: %w", p.Name, err)
		}
		c.metrics.podsDeleted.Inc()
		mu.Lock()
		gone++
		mu.Unlock()
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		if !errors.Is(err, shard.ErrNotOwner) {
			c.Recorder.Eventf(job, corev1.EventTypeWarning, "FailedDeletePod", "Error deleting pods: %v", err)
		}
		return gone, issued, err
	}
	return gone, issued, nil
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

// sync brings the Job's objects to what its spec asks: the PodGroup, the
// PVCs, the plugins' objects, and, once the scheduler has admitted the
// PodGroup, the pods (tasks waiting on dependsOn later).
func (c *Controller) sync(ctx context.Context, key string, job *batch.Job, info *cache.JobInfo) (podCounts, error) {
	slot := c.slotOf(key)
	set, err := c.pluginsFor(job, slot)
	if err != nil {
		return podCounts{}, c.pluginFailed(job, "job plugins", err)
	}
	c.reportIgnored(key, job, set)
	heldByPlugins, err := c.syncPlugins(ctx, key, job, set)
	if err != nil {
		return podCounts{}, c.pluginFailed(job, "job plugins on sync", err)
	}
	if len(heldByPlugins) > 0 {
		// Pods would mount or resolve an earlier Job's objects: nothing starts until
		// the names are this Job's.
		c.waitForNames(key, job, heldByPlugins)
		return countPods(job, info), nil
	}
	admitted, err := c.syncPodGroup(ctx, key, job, info, slot)
	if err != nil {
		c.Recorder.Eventf(job, corev1.EventTypeWarning, string(batch.PodGroupError), "Failed to create PodGroup, err: %v", err)
		return podCounts{}, err
	}
	if err := c.syncPVCs(ctx, key, job, slot); err != nil {
		c.Recorder.Eventf(job, corev1.EventTypeWarning, string(batch.PVCError), "Failed to create PVC, err: %v", err)
		return podCounts{}, err
	}

	var pc podCounts
	var create, surplus []*corev1.Pod
	var held []holder // pods of another UID holding names this Job's pods need
	for ti := range job.Spec.Tasks {
		task := &job.Spec.Tasks[ti]
		existing := info.Pods[task.Name]
		ready := admitted && dependenciesReady(job, task, info)
		for i := range int(task.Replicas) {
			name := build.PodName(job.Name, task.Name, i)
			if p, ok := existing[name]; ok {
				if p.DeletionTimestamp != nil {
					pc.Terminating++
				} else {
					pc.add(task.Name, p.Status.Phase)
				}
				continue
			}
			if p, ok := info.Foreign[name]; ok {
				held = append(held, holderOf("pod", p, true)) // never counted; its delete wakes the Job
				continue
			}
			if left, pending := c.cfg.Cache.Creating(slot, key, cache.Pods, job.Namespace, name); pending {
				pc.add(task.Name, corev1.PodPending) // created, not in this view yet
				if left > 0 {
					c.wakeAfter(key, left)
				}
				continue
			}
			if !ready || len(create) >= maxCreateBatch {
				continue // the rest when these creates reach the cache and bring the Job back
			}
			pod := build.Pod(job, task, i, slot)
			if err := set.OnPodCreate(pod, job); err != nil {
				return pc, c.pluginFailed(job, "job plugins on pod create", err)
			}
			create = append(create, pod)
		}
		for name, p := range existing {
			if !build.IsPodOf(job.Name, task, name) && p.DeletionTimestamp == nil {
				surplus = append(surplus, p)
			}
		}
	}
	for task, pods := range info.Pods { // pods of tasks the spec no longer has
		if !hasTask(job, task) {
			for _, p := range pods {
				if p.DeletionTimestamp == nil {
					surplus = append(surplus, p)
				}
			}
		}
	}
	created, taken, err := c.createPods(ctx, key, job, create)
	for _, p := range created {
		pc.add(p.Annotations[batch.TaskSpecKey], corev1.PodPending)
	}
	c.waitForNames(key, job, append(held, taken...))
	if err != nil {
		return pc, err
	}
	deleted, _, err := c.deletePods(ctx, key, job, surplus)
	pc.Terminating += deleted
	return pc, err
}

// maxCreateBatch bounds the pods one sync builds and creates: what a sync holds is the pods
// that exist and one batch, whatever the replicas (a plugin may make each pod large: tensorflow
// writes every replica's host into each).
const maxCreateBatch = 256

func hasTask(job *batch.Job, name string) bool {
	for _, t := range job.Spec.Tasks {
		if t.Name == name {
			return true
		}
	}
	return false
}

// dependenciesReady reports whether the tasks that task dependsOn run:
// each (or, with iteration any, one) has at least its minimum of pods
// Running or Succeeded.
func dependenciesReady(job *batch.Job, task *batch.TaskSpec, info *cache.JobInfo) bool {
	dep := task.DependsOn
	if dep == nil || len(dep.Name) == 0 {
		return true
	}
	readyCount := 0
	for _, name := range dep.Name {
		var need int32 = 1
		for i := range job.Spec.Tasks {
			if job.Spec.Tasks[i].Name == name {
				need = build.MinTaskMember(&job.Spec.Tasks[i])
			}
		}
		var up int32
		for _, p := range info.Pods[name] {
			if p.DeletionTimestamp == nil && (p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded) {
				up++
			}
		}
		if up >= max(need, 1) {
			readyCount++
		}
	}
	if dep.Iteration == batch.IterationAny {
		return readyCount > 0
	}
	return readyCount == len(dep.Name)
}

// createPods creates pods, a few at a time; AlreadyExists counts as created,
// unless the pod there is another UID's (taken: the Job waits for its name).
// Each create is expected before it is issued, so that no reconcile issues it
// again before the cache has seen the pod. It returns the pods that exist now.
func (c *Controller) createPods(ctx context.Context, key string, job *batch.Job, pods []*corev1.Pod) (created []*corev1.Pod, taken []holder, err error) {
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	slot := c.slotOf(key)
	var mu sync.Mutex
	errs := c.parallel(len(pods), func(i int) error {
		p := pods[i]
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
			x.ExpectCreate()
		}
		mu.Lock()
		created = append(created, p)
		mu.Unlock()
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		if !kit.IsTransient(err) { // a transient one is told once per wait (kit.Settings.OnWait)
			c.Recorder.Eventf(job, corev1.EventTypeWarning, "FailedCreatePod", "Error creating pods: %v", err)
		}
		return created, taken, err
	}
	return created, taken, nil
}

// syncPodGroup creates or updates the Job's PodGroup and reports whether the
// scheduler has admitted it (its phase is set and not Pending). While a create
// or delete of it has not reached the cache yet, it waits: the cache's add or
// delete brings the Job back.
func (c *Controller) syncPodGroup(ctx context.Context, key string, job *batch.Job, info *cache.JobInfo, slot int) (bool, error) {
	desired := build.PodGroup(job, slot, c.priorityOf)
	existing := info.PodGroup
	expect := c.cfg.Cache.Expectations()
	if existing != nil {
		if left, pending := expect.Deleting(slot, key, cache.PodGroups, existing.Namespace, existing.Name, existing.UID); pending {
			c.wakeAfter(key, left)
			return false, nil
		}
	}
	if existing == nil || existing.Name != desired.Name {
		if left, pending := c.cfg.Cache.Creating(slot, key, cache.PodGroups, desired.Namespace, desired.Name); pending {
			if left > 0 {
				c.wakeAfter(key, left)
			}
			return false, nil
		}
		x := c.expected(slot, key, cache.PodGroups, desired)
		sent, err := kit.Create(ctx, c.Guard, x, func(ctx context.Context) error {
			_, err := c.cfg.Volcano.SchedulingV1beta1().PodGroups(job.Namespace).Create(ctx, desired, metav1.CreateOptions{})
			return err
		})
		switch {
		case err == nil:
		case !sent:
			return false, err
		case apierrors.IsAlreadyExists(err):
			c.metrics.createsRefused.Inc()
			// Its name is the Job's: it is expected again, as if this create had made it, so
			// that the Job waits for the cache to show it rather than creating it again (the
			// job controller's behaviour before kit.Create's policy).
			x.ExpectCreate()
		default:
			return false, fmt.Errorf("create podgroup %s: %w", desired.Name, err)
		}
		return false, nil // its phase arrives with the informer
	}
	if updated, changed := build.UpdatePodGroup(existing, desired); changed {
		if err := c.Guard(ctx); err != nil {
			return false, err
		}
		if _, err := c.cfg.Volcano.SchedulingV1beta1().PodGroups(job.Namespace).Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return false, fmt.Errorf("update podgroup %s: %w", existing.Name, err)
		}
	}
	phase := existing.Status.Phase
	return phase != "" && phase != scheduling.PodGroupPending, nil
}

// priorityOf values a PriorityClass from the cache.
func (c *Controller) priorityOf(name string) (int32, bool) {
	pc, err := c.cfg.Cache.PriorityClasses().Lister().Get(name)
	if err != nil {
		return 0, false
	}
	return pc.Value, true
}

// syncPVCs creates the claims of job.spec.volumes that carry a claim spec.
func (c *Controller) syncPVCs(ctx context.Context, key string, job *batch.Job, slot int) error {
	if len(job.Spec.Volumes) == 0 {
		return nil
	}
	have := map[string]bool{}
	owned, _ := c.cfg.Cache.OwnedBy(cache.PVCs, key, job.UID)
	for _, o := range owned {
		have[o.(*corev1.PersistentVolumeClaim).Name] = true
	}
	for i := range job.Spec.Volumes {
		name := build.ClaimName(job, i)
		// A volume that names its claim is only mounted, as in Volcano: that includes the
		// claims vc-controller-manager made, whose generated names it wrote back into the
		// Job's volumes beside their claim spec.
		pvc := build.PVC(job, i, slot)
		if pvc == nil || have[name] {
			continue
		}
		if _, pending := c.cfg.Cache.Creating(slot, key, cache.PVCs, job.Namespace, name); pending {
			continue
		}
		x := c.expected(slot, key, cache.PVCs, pvc)
		sent, err := kit.Create(ctx, c.Guard, x, func(ctx context.Context) error {
			_, err := c.cfg.Kube.CoreV1().PersistentVolumeClaims(job.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
			return err
		})
		switch {
		case err == nil:
		case !sent:
			return err
		case apierrors.IsAlreadyExists(err):
			// Its name is the Job's: it is expected again, as if this create had made it, so
			// that no reconcile creates it again before the cache shows it (the job
			// controller's behaviour before kit.Create's policy).
			x.ExpectCreate()
		default:
			return fmt.Errorf("create pvc %s: %w", pvc.Name, err)
		}
	}
	return nil
}

// parallel runs fn for 0..n-1, at most PodParallelism at once, and returns
// the errors.
func (c *Controller) parallel(n int, fn func(i int) error) []error {
	if n == 0 {
		return nil
	}
	errs := make([]error, n)
	sem := make(chan struct{}, c.cfg.PodParallelism)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	return errs
}

// ofVersion reports whether pod was made for version of its Job.
func ofVersion(pod *corev1.Pod, version int32) bool {
	v, err := strconv.Atoi(pod.Annotations[batch.JobVersion])
	return err == nil && int32(v) == version
}

// expected names the create or delete by the Job at key (of slot) of obj, a
// resource r, for kit.Create and kit.Delete.
func (c *Controller) expected(slot int, key string, r cache.Resource, obj metav1.Object) kit.Expected {
	return kit.Expected{Expectations: c.cfg.Cache.Expectations(), Slot: slot, Key: key, Resource: r,
		Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()}
}
