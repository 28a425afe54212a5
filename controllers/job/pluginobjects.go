package job

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/plugins"
	"github.com/ringfire/ringfire/shard"
)

// pluginsFor builds the Job's plugins; a bad plugin spec is an error that
// says what to fix.
func (c *Controller) pluginsFor(job *batch.Job, slot int) (plugins.Set, error) {
	return plugins.ForJob(job, plugins.Env{Slot: slot})
}

// PluginArgumentsIgnored is the reason of the Warning Event that tells the
// arguments a plugin skipped, as Volcano skips them (Volcano only logs them).
const PluginArgumentsIgnored = "PluginArgumentsIgnored"

// reportIgnored tells, in a log line and a Warning Event, the arguments the
// plugins skipped; once per life of the Job, on the sync that runs their
// OnJobAdd (set.Ignored leaves out the plugins that have marked the Job).
func (c *Controller) reportIgnored(key string, job *batch.Job, set plugins.Set) {
	for _, err := range set.Ignored(job) {
		c.Log.Warn("job plugin arguments ignored", "job", key, "error", err)
		c.Recorder.Eventf(job, corev1.EventTypeWarning, PluginArgumentsIgnored, "%v", err)
	}
}

// pluginFailed reports a plugin error of the Job at once, in a Warning Event
// with Volcano's reason PluginError, and returns it, so that the dispatcher
// retries the request (and after MaxRequeue failures gives up on it, as on
// any failure). Every plugin error of a reconcile goes through here: none is
// dropped. A replica that lost the Job's slot records no Event.
func (c *Controller) pluginFailed(job *batch.Job, what string, err error) error {
	if !errors.Is(err, shard.ErrNotOwner) {
		c.Recorder.Eventf(job, corev1.EventTypeWarning, string(batch.PluginError), "%s: %v", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// syncPlugins writes the objects the plugins ask for. OnJobAdd runs once
// per plugin (it marks work's status.controlledResources, written with the
// status); OnJobUpdate on every sync. It returns the objects of another UID
// that hold names the plugins need (see foreign.go).
func (c *Controller) syncPlugins(ctx context.Context, key string, work *batch.Job, set plugins.Set) ([]holder, error) {
	if len(set) == 0 {
		return nil, nil
	}
	add, err := set.OnJobAdd(work)
	if err != nil {
		return nil, err
	}
	update, err := set.OnJobUpdate(work)
	if err != nil {
		return nil, err
	}
	add.Create = append(add.Create, update.Create...)
	add.Apply = append(add.Apply, update.Apply...)
	add.Delete = append(add.Delete, update.Delete...)
	return c.write(ctx, key, work.UID, add)
}

// deletePluginObjects removes what the plugins made, on a full kill, as
// Volcano does; a restart makes them afresh.
func (c *Controller) deletePluginObjects(ctx context.Context, key string, work *batch.Job, set plugins.Set) error {
	ch, err := set.OnJobDelete(work)
	if err != nil {
		return err
	}
	_, err = c.write(ctx, key, work.UID, ch)
	return err
}

// write carries out a plugin's Changes for the Job of uid against the cache's
// view, skipping the creates and deletes the cache has not caught up with yet.
// An object of the name that another UID controls is left alone, neither
// reused, updated nor deleted: it is returned as a holder to wait for.
func (c *Controller) write(ctx context.Context, key string, uid types.UID, ch plugins.Changes) ([]holder, error) {
	var held []holder
	ensure := func(obj plugins.Object) (existing plugins.Object, ours bool, err error) {
		existing, ok := c.lookup(obj)
		if ok && !cache.ControlledBy(existing, uid) {
			held = append(held, holderOf(kindOf(obj), existing, true))
			return nil, false, nil
		}
		if ok {
			return existing, true, nil
		}
		h, taken, err := c.create(ctx, key, obj, uid)
		if taken {
			held = append(held, h)
		}
		return nil, false, err
	}
	for _, obj := range ch.Create {
		if _, _, err := ensure(obj); err != nil {
			return held, err
		}
	}
	for _, obj := range ch.Apply {
		existing, ours, err := ensure(obj)
		if err != nil {
			return held, err
		}
		if !ours || sameContent(existing, obj) {
			continue
		}
		obj.SetResourceVersion(existing.GetResourceVersion())
		if err := c.update(ctx, obj); err != nil {
			return held, err
		}
	}
	for _, obj := range ch.Delete {
		existing, ok := c.lookup(obj)
		if !ok || !cache.ControlledBy(existing, uid) {
			continue // gone, or not this Job's to delete: the garbage collector's
		}
		if err := c.remove(ctx, key, existing); err != nil {
			return held, err
		}
	}
	return held, nil
}

func resourceOf(obj plugins.Object) (cache.Resource, error) {
	switch obj.(type) {
	case *corev1.Service:
		return cache.Services, nil
	case *corev1.ConfigMap:
		return cache.ConfigMaps, nil
	case *corev1.Secret:
		return cache.Secrets, nil
	case *networkingv1.NetworkPolicy:
		return cache.NetworkPolicies, nil
	}
	return "", fmt.Errorf("plugin object %T is not one ringfire writes", obj)
}

// lookup finds the cached object of the same kind, namespace and name.
func (c *Controller) lookup(obj plugins.Object) (plugins.Object, bool) {
	r, err := resourceOf(obj)
	if err != nil {
		return nil, false
	}
	got, ok, _ := c.cfg.Cache.Owned(r).Indexer().GetByKey(obj.GetNamespace() + "/" + obj.GetName())
	if !ok {
		return nil, false
	}
	o, ok := got.(plugins.Object)
	return o, ok
}

func sameContent(a, b plugins.Object) bool {
	switch x := a.(type) {
	case *corev1.ConfigMap:
		y := b.(*corev1.ConfigMap)
		return equality.Semantic.DeepEqual(x.Data, y.Data)
	case *corev1.Secret:
		y := b.(*corev1.Secret)
		return equality.Semantic.DeepEqual(x.Data, y.Data)
	case *corev1.Service:
		y := b.(*corev1.Service)
		return equality.Semantic.DeepEqual(x.Spec.Ports, y.Spec.Ports) && equality.Semantic.DeepEqual(x.Spec.Selector, y.Spec.Selector)
	case *networkingv1.NetworkPolicy:
		y := b.(*networkingv1.NetworkPolicy)
		return equality.Semantic.DeepEqual(x.Spec, y.Spec)
	}
	return false
}

// create creates a plugin object of the Job at key (of uid), unless a create
// of it is already on its way to the cache. taken reports an object of the
// name, found by the create, that uid does not control.
func (c *Controller) create(ctx context.Context, key string, obj plugins.Object, uid types.UID) (h holder, taken bool, err error) {
	r, err := resourceOf(obj)
	if err != nil {
		return holder{}, false, err
	}
	slot, expect := c.slotOf(key), c.cfg.Cache.Expectations()
	ns, name, opts := obj.GetNamespace(), obj.GetName(), metav1.CreateOptions{}
	if _, pending := c.cfg.Cache.Creating(slot, key, r, ns, name); pending {
		return holder{}, false, nil
	}
	if err := c.guard(ctx); err != nil {
		return holder{}, false, err
	}
	expect.ExpectCreate(slot, key, r, ns, name)
	switch o := obj.(type) {
	case *corev1.Service:
		_, err = c.cfg.Kube.CoreV1().Services(ns).Create(ctx, o, opts)
	case *corev1.ConfigMap:
		_, err = c.cfg.Kube.CoreV1().ConfigMaps(ns).Create(ctx, o, opts)
	case *corev1.Secret:
		_, err = c.cfg.Kube.CoreV1().Secrets(ns).Create(ctx, o, opts)
	case *networkingv1.NetworkPolicy:
		_, err = c.cfg.Kube.NetworkingV1().NetworkPolicies(ns).Create(ctx, o, opts)
	}
	if apierrors.IsAlreadyExists(err) {
		if h, taken := c.pluginHolder(ctx, obj, uid); taken {
			expect.CreateFailed(slot, key, r, ns, name) // nothing of this Job's is coming
			return h, true, nil
		}
		return holder{}, false, nil
	}
	if err != nil {
		expect.CreateFailed(slot, key, r, ns, name)
		return holder{}, false, fmt.Errorf("create %T %s: %w", obj, name, err)
	}
	return holder{}, false, nil
}

func (c *Controller) update(ctx context.Context, obj plugins.Object) error {
	if err := c.guard(ctx); err != nil {
		return err
	}
	ns, opts := obj.GetNamespace(), metav1.UpdateOptions{}
	var err error
	switch o := obj.(type) {
	case *corev1.Service:
		_, err = c.cfg.Kube.CoreV1().Services(ns).Update(ctx, o, opts)
	case *corev1.ConfigMap:
		_, err = c.cfg.Kube.CoreV1().ConfigMaps(ns).Update(ctx, o, opts)
	case *corev1.Secret:
		_, err = c.cfg.Kube.CoreV1().Secrets(ns).Update(ctx, o, opts)
	case *networkingv1.NetworkPolicy:
		_, err = c.cfg.Kube.NetworkingV1().NetworkPolicies(ns).Update(ctx, o, opts)
	default:
		_, err = resourceOf(obj)
	}
	if err != nil {
		return fmt.Errorf("update %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}

// remove deletes a plugin object of the Job at key, unless a delete of it is
// already on its way to the cache.
func (c *Controller) remove(ctx context.Context, key string, obj plugins.Object) error {
	r, err := resourceOf(obj)
	if err != nil {
		return err
	}
	slot, expect := c.slotOf(key), c.cfg.Cache.Expectations()
	uid, ns, name := obj.GetUID(), obj.GetNamespace(), obj.GetName()
	if _, pending := expect.Deleting(slot, key, r, ns, name, uid); pending {
		return nil
	}
	if err := c.guard(ctx); err != nil {
		return err
	}
	expect.ExpectDelete(slot, key, r, ns, name, uid)
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	switch obj.(type) {
	case *corev1.Service:
		err = c.cfg.Kube.CoreV1().Services(ns).Delete(ctx, obj.GetName(), opts)
	case *corev1.ConfigMap:
		err = c.cfg.Kube.CoreV1().ConfigMaps(ns).Delete(ctx, obj.GetName(), opts)
	case *corev1.Secret:
		err = c.cfg.Kube.CoreV1().Secrets(ns).Delete(ctx, obj.GetName(), opts)
	case *networkingv1.NetworkPolicy:
		err = c.cfg.Kube.NetworkingV1().NetworkPolicies(ns).Delete(ctx, obj.GetName(), opts)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		expect.DeleteFailed(slot, key, r, ns, name, uid)
		return fmt.Errorf("delete %T %s: %w", obj, name, err)
	}
	return nil
}
