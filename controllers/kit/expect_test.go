package kit

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ringfire/ringfire/cache"
)

func TestExpectedWritePolicy(t *testing.T) {
	ctx := context.Background()
	pass := func(context.Context) error { return nil }
	gr := schema.GroupResource{Resource: "pods"}
	x := Expected{Expectations: cache.NewExpectations(0), Slot: 1, Key: "ns/job", Resource: cache.Pods, Namespace: "ns", Name: "p", UID: "u"}
	creating := func() bool {
		_, ok := x.Expectations.Creating(x.Slot, x.Key, x.Resource, x.Namespace, x.Name)
		return ok
	}

	if sent, err := Create(ctx, pass, x, func(context.Context) error { return nil }); !sent || err != nil || !creating() {
		t.Fatalf("a create: sent %v, err %v, expected %v; want sent, no error, expected", sent, err, creating())
	}
	x.Expectations.CreateFailed(x.Slot, x.Key, x.Resource, x.Namespace, x.Name)
	exists := apierrors.NewAlreadyExists(gr, "p")
	if sent, err := Create(ctx, pass, x, func(context.Context) error { return exists }); !sent || !apierrors.IsAlreadyExists(err) || creating() {
		t.Fatalf("AlreadyExists: sent %v, err %v, expected %v; want it returned and forgotten", sent, err, creating())
	}
	fenced := errors.New("fenced")
	called := false
	if sent, err := Create(ctx, func(context.Context) error { return fenced }, x, func(context.Context) error { called = true; return nil }); sent || !errors.Is(err, fenced) || called || creating() {
		t.Fatalf("a fenced create: sent %v, err %v, called %v, expected %v; want the guard's error and nothing done", sent, err, called, creating())
	}

	if sent, err := Delete(ctx, pass, x, func(context.Context) error { return apierrors.NewNotFound(gr, "p") }); !sent || err != nil {
		t.Fatalf("NotFound: sent %v, err %v; want a success", sent, err)
	}
	if _, ok := x.Deleting(); !ok {
		t.Fatal("NotFound forgot the delete; want it kept for the cache to observe")
	}
	x.UID = "other"
	if _, err := Delete(ctx, pass, x, func(context.Context) error { return apierrors.NewInternalError(errors.New("boom")) }); err == nil {
		t.Fatal("a failed delete returned no error")
	}
	if _, ok := x.Deleting(); ok {
		t.Fatal("a failed delete is still expected")
	}
	x.Resource = cache.Secrets
	if _, err := Delete(ctx, pass, x, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, ok := x.Deleting(); ok {
		t.Fatal("a delete of an unwatched kind is pending; want none")
	}

	x.Resource = cache.Pods
	done := func(metav1.Object) bool { return true }
	if sent, err := Update(ctx, pass, x, done, func(context.Context) error { return nil }); !sent || err != nil {
		t.Fatalf("an update: sent %v, err %v; want sent, no error", sent, err)
	}
	if _, ok := x.Updating(); !ok {
		t.Fatal("an update just made is not expected")
	}
	x.Expectations.UpdateFailed(x.Slot, x.Key, x.Resource, x.Namespace, x.Name, x.UID)
	if sent, err := Update(ctx, pass, x, done, func(context.Context) error { return apierrors.NewNotFound(gr, "p") }); !sent || err != nil {
		t.Fatalf("an update of an object gone: sent %v, err %v; want a success", sent, err)
	}
	if _, ok := x.Updating(); ok {
		t.Fatal("the update of an object gone is still expected")
	}
	conflict := apierrors.NewConflict(gr, "p", errors.New("uid"))
	if _, err := Update(ctx, pass, x, done, func(context.Context) error { return conflict }); !apierrors.IsConflict(err) {
		t.Fatalf("a Conflict: err %v; want it returned", err)
	}
	if _, ok := x.Updating(); ok {
		t.Fatal("a failed update is still expected")
	}
}
