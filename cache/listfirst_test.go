package cache

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestListFirstListsConsistentlyThenWatches: a reflector over listFirst
// starts with a list at the newest resourceVersion (not the watch-list's
// initial events, not the API server cache's "0"), then watches from the
// list's resourceVersion.
func TestListFirstListsConsistentlyThenWatches(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	var listRV string
	fw := watch.NewFake()
	watched := make(chan metav1.ListOptions, 1)
	lw := newListFirst(
		func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, "list")
			listRV = o.ResourceVersion
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "42"}}, nil
		},
		func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			mu.Lock()
			calls = append(calls, "watch")
			mu.Unlock()
			select {
			case watched <- o:
			default:
			}
			return fw, nil
		},
	)
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	r := toolscache.NewReflector(lw, &corev1.Pod{}, store, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.RunWithContext(ctx)
	var o metav1.ListOptions
	select {
	case o = <-watched:
	case <-time.After(30 * time.Second):
		t.Fatal("the reflector never watched")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) < 2 || calls[0] != "list" || calls[1] != "watch" {
		t.Fatalf("calls %v, want a list, then a watch", calls)
	}
	if listRV != "" {
		t.Errorf("the first list asked for resourceVersion %q, want \"\" (the newest)", listRV)
	}
	if o.SendInitialEvents != nil || o.ResourceVersion != "42" {
		t.Errorf("the watch: sendInitialEvents %v, resourceVersion %q; want none, and the list's 42", o.SendInitialEvents, o.ResourceVersion)
	}
}
