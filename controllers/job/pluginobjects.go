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
	toolscache "k8s.io/client-go/tools/cache"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/plan"
	"github.com/ringfire/ringfire/controllers/job/plugins"
	"github.com/ringfire/ringfire/controllers/kit"
	"github.com/ringfire/ringfire/shard"
)

// PluginArgumentsIgnored is the reason of the Warning Event that tells the
// arguments a plugin skipped, as Volcano skips them (Volcano only logs them).
const PluginArgumentsIgnored = "PluginArgumentsIgnored"

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

// write carries out a plugin's Changes for the Job of uid against the cache's
// view, skipping the creates and deletes the cache has not caught up with yet.
// An object of the name that another UID controls is left alone, neither
// reused, updated nor deleted: it is returned as a holder to wait for.
//
// A Secret is in no cache (cache.Owned): it is created when asked for unless
// this replica's expectation says the Job made it already, and read by name
// (GET) only when its create meets one of the name, or before its delete, to
// learn whose it is.
func (c *Controller) write(ctx context.Context, key string, uid types.UID, ch plugins.Changes) ([]plan.Holder, error) {
	var held []plan.Holder
	ensure := func(obj plugins.Object) (existing plugins.Object, ours bool, err error) {
		existing, ok := c.lookup(obj)
		if ok && !cache.ControlledBy(existing, uid) {
			held = append(held, plan.HolderOf(kindOf(obj), existing, true))
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
		existing, ok, err := c.find(ctx, key, obj)
		if err != nil {
			return held, err
		}
		if !ok || !cache.ControlledBy(existing, uid) {
			continue // gone, or not this Job's to delete: the garbage collector's
		}
		if err := c.remove(ctx, key, existing); err != nil {
			return held, err
		}
	}
	return held, nil
}

// find returns the object of obj's kind and name to delete: from the cache, or
// for a kind no cache holds (a Secret), from the API server, forgetting first
// the Job's create of it (a later OnJobAdd must make it again).
func (c *Controller) find(ctx context.Context, key string, obj plugins.Object) (plugins.Object, bool, error) {
	r, err := resourceOf(obj)
	if err != nil {
		return nil, false, err
	}
	if cache.Watched(r) {
		existing, ok := c.lookup(obj)
		return existing, ok, nil
	}
	c.cfg.Cache.Expectations().CreateFailed(c.slotOf(key), key, r, obj.GetNamespace(), obj.GetName())
	got, err := c.get(ctx, obj)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("get %s %s: %w", kindOf(obj), obj.GetName(), err)
	}
	return got, true, nil
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

// lookup finds the cached object of the same kind, namespace and name; never
// one of a kind the cache does not watch.
func (c *Controller) lookup(obj plugins.Object) (plugins.Object, bool) {
	r, err := resourceOf(obj)
	if err != nil || !cache.Watched(r) {
		return nil, false
	}
	got, ok, _ := c.cfg.Cache.Owned(r).Indexer().GetByKey(toolscache.MetaObjectToName(obj).String())
	if !ok {
		return nil, false
	}
	o, ok := got.(plugins.Object)
	return o, ok
}

// sameContent reports whether an applied object, a ConfigMap (plugins.Changes),
// has the content the plugin asks for; anything else is never the same.
func sameContent(a, b plugins.Object) bool {
	x, ok1 := a.(*corev1.ConfigMap)
	y, ok2 := b.(*corev1.ConfigMap)
	return ok1 && ok2 && equality.Semantic.DeepEqual(x.Data, y.Data)
}

// create creates a plugin object of the Job at key (of uid), unless a create
// of it is already on its way to the cache (for a Secret: unless the Job made
// it, as this replica remembers). taken reports an object of the name, found
// by the create, that uid does not control.
func (c *Controller) create(ctx context.Context, key string, obj plugins.Object, uid types.UID) (h plan.Holder, taken bool, err error) {
	r, err := resourceOf(obj)
	if err != nil {
		return plan.Holder{}, false, err
	}
	slot := c.slotOf(key)
	ns, name, opts := obj.GetNamespace(), obj.GetName(), metav1.CreateOptions{}
	if _, pending := c.cfg.Cache.Creating(slot, key, r, ns, name); pending {
		return plan.Holder{}, false, nil
	}
	x := c.expected(slot, key, r, obj)
	sent, err := kit.Create(ctx, c.Guard, x, func(ctx context.Context) (err error) {
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
		return err
	})
	switch {
	case err == nil:
	case !sent:
		return plan.Holder{}, false, err
	case apierrors.IsAlreadyExists(err):
		if h, taken := c.pluginHolder(ctx, obj, uid); taken {
			return h, true, nil // nothing of this Job's is coming
		}
		// The object is this Job's, made before: it is expected again, as if this create
		// had made it, so that no reconcile creates it again before the cache shows it (for
		// a Secret, which no cache shows, the expectation is all that remembers it: the job
		// controller's behaviour before kit.Create's policy).
		x.ExpectCreate()
	default:
		return plan.Holder{}, false, fmt.Errorf("create %T %s: %w", obj, name, err)
	}
	return plan.Holder{}, false, nil
}

// update writes an applied object's new content. Only ConfigMaps are applied
// (plugins.Changes): the role grants update on nothing else a plugin makes.
func (c *Controller) update(ctx context.Context, obj plugins.Object) error {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return fmt.Errorf("update %s %s: only ConfigMaps are applied", kindOf(obj), obj.GetName())
	}
	if err := c.Guard(ctx); err != nil {
		return err
	}
	if _, err := c.cfg.Kube.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update ConfigMap %s: %w", cm.Name, err)
	}
	return nil
}

// remove deletes a plugin object of the Job at key, bound to its UID, unless a
// delete of it is already on its way to the cache.
func (c *Controller) remove(ctx context.Context, key string, obj plugins.Object) error {
	r, err := resourceOf(obj)
	if err != nil {
		return err
	}
	uid, ns, name := obj.GetUID(), obj.GetNamespace(), obj.GetName()
	// A kind no cache watches is never pending, nor expected: no cache would see the
	// delete, and find read the object just now.
	x := c.expected(c.slotOf(key), key, r, obj)
	if _, pending := x.Deleting(); pending {
		return nil
	}
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	sent, err := kit.Delete(ctx, c.Guard, x, func(ctx context.Context) (err error) {
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
		return err
	})
	if err != nil && sent {
		return fmt.Errorf("delete %T %s: %w", obj, name, err)
	}
	return err
}
