package kit

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ringfire/ringfire/cache"
)

// Expected names one create, delete or update a controller issues for the object at
// Key (of Slot) and waits for its cache to see: the object Resource
// Namespace/Name, and for a delete the UID it is bound to.
type Expected struct {
	Expectations *cache.Expectations
	Slot         int
	Key          string
	Resource     cache.Resource
	Namespace    string
	Name         string
	UID          types.UID
}

// Create issues an expected create, every controller's way:
//
//	guard → expect the create → create → on failure, forget it.
//
// The one policy for AlreadyExists: the object of that name exists, and it is
// not this create's, so it is not counted as a pending creation of ours: the
// expectation is forgotten, and the AlreadyExists error is returned so that
// the caller decides what the object there means (a name taken by another
// owner, or its own object the cache is still to show; a caller that knows it
// for its own may expect it again, ExpectCreate, and say why). Any other error
// is returned too, after the expectation is forgotten. sent reports whether
// the create was issued: a guard error is returned, unsent, before anything
// is expected or written.
func Create(ctx context.Context, guard func(context.Context) error, x Expected, create func(context.Context) error) (sent bool, err error) {
	if err := guard(ctx); err != nil {
		return false, err
	}
	x.ExpectCreate()
	if err := create(ctx); err != nil {
		x.Expectations.CreateFailed(x.Slot, x.Key, x.Resource, x.Namespace, x.Name)
		return true, err
	}
	return true, nil
}

// ExpectCreate records the create as expected, as Create does before it
// writes.
func (x Expected) ExpectCreate() {
	x.Expectations.ExpectCreate(x.Slot, x.Key, x.Resource, x.Namespace, x.Name)
}

// Delete issues an expected delete, every controller's way:
//
//	guard → expect the delete → delete → on failure, forget it.
//
// The one policy for NotFound: the object is gone already, which is what the
// delete was for, so it is a success (nil) and handled as one: the
// expectation, bound to the object's UID, stays for the cache to observe the
// object going (or to lapse if the cache saw it go already), so that no
// reconcile running before the cache catches up deletes it again. Any other
// error is returned after the expectation is forgotten. A delete of a
// resource no cache watches (cache.Watched) is not expected: nothing would
// ever see it. sent reports whether the delete was issued: a guard error is
// returned, unsent, before anything is expected or written.
func Delete(ctx context.Context, guard func(context.Context) error, x Expected, del func(context.Context) error) (sent bool, err error) {
	if err := guard(ctx); err != nil {
		return false, err
	}
	watched := cache.Watched(x.Resource)
	if watched {
		x.Expectations.ExpectDelete(x.Slot, x.Key, x.Resource, x.Namespace, x.Name, x.UID)
	}
	err = del(ctx)
	if err == nil || apierrors.IsNotFound(err) {
		return true, nil
	}
	if watched {
		x.Expectations.DeleteFailed(x.Slot, x.Key, x.Resource, x.Namespace, x.Name, x.UID)
	}
	return true, err
}

// Update issues an expected update of the object (say, a finalizer taken off),
// every controller's way:
//
//	guard → expect the update → update → on failure, forget it.
//
// The cache sees the update when its copy of the object makes done true, or
// the object leaves. The one policy for NotFound is Delete's: the object is
// gone, and nothing of it is left to update, so it is a success (nil), and the
// expectation is forgotten. Any other error (a Conflict: another object of the
// name) is returned after the expectation is forgotten. sent reports whether
// the update was issued, as for Delete.
func Update(ctx context.Context, guard func(context.Context) error, x Expected, done func(metav1.Object) bool, update func(context.Context) error) (sent bool, err error) {
	if err := guard(ctx); err != nil {
		return false, err
	}
	x.Expectations.ExpectUpdate(x.Slot, x.Key, x.Resource, x.Namespace, x.Name, x.UID, done)
	err = update(ctx)
	if err == nil {
		return true, nil
	}
	x.Expectations.UpdateFailed(x.Slot, x.Key, x.Resource, x.Namespace, x.Name, x.UID)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return true, err
}

// Creating reports whether the create is expected and not yet seen by the
// cache, and how long until the expectation lapses.
func (x Expected) Creating() (time.Duration, bool) {
	return x.Expectations.Creating(x.Slot, x.Key, x.Resource, x.Namespace, x.Name)
}

// Updating reports whether the update is expected and not yet seen by the
// cache, and how long until the expectation lapses.
func (x Expected) Updating() (time.Duration, bool) {
	return x.Expectations.Updating(x.Slot, x.Key, x.Resource, x.Namespace, x.Name, x.UID)
}

// Deleting reports whether the delete is expected and not yet seen by the
// cache, and how long until the expectation lapses. A delete of a resource no
// cache watches is never pending.
func (x Expected) Deleting() (time.Duration, bool) {
	if !cache.Watched(x.Resource) {
		return 0, false
	}
	return x.Expectations.Deleting(x.Slot, x.Key, x.Resource, x.Namespace, x.Name, x.UID)
}
