package cache

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// A paced list hands over the first page at once and asks the next one only
// once the pods of the pages before it are paid for, across the lists that
// share the limiter; the last page goes at once.
func TestPacedListPaysForEachPage(t *testing.T) {
	page := func(n int) *corev1.PodList {
		l := &corev1.PodList{ListMeta: metav1.ListMeta{Continue: "more"}}
		for i := range n {
			l.Items = append(l.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i)}})
		}
		return l
	}
	calls := 0
	list := pacedList(rate.NewLimiter(1, pageBurst), func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		calls++
		return page(pageBurst), nil
	})
	if _, err := list(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatalf("first page: %v", err)
	}
	// At 1 pod a second the next 500 pods are 500 s away: a bounded wait
	// gives up at once.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := list(ctx, metav1.ListOptions{Continue: "next"}); err == nil {
		t.Fatal("second page handed over before its pods were paid for")
	}
	if calls != 2 {
		t.Errorf("list called %d times, want 2", calls)
	}
	// The last page has nothing after it to pace: it goes at once, though the
	// limiter has nothing left.
	last := pacedList(rate.NewLimiter(1, pageBurst), func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		return &corev1.PodList{Items: page(pageBurst).Items}, nil
	})
	for range 3 {
		if _, err := last(ctx, metav1.ListOptions{Continue: "next"}); err != nil {
			t.Fatalf("last page: %v", err)
		}
	}

	// An empty page and an error cost nothing.
	free := pacedList(rate.NewLimiter(1, pageBurst), func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
		if o.Continue == "fail" {
			return nil, fmt.Errorf("boom")
		}
		return page(0), nil
	})
	for range 3 {
		if _, err := free(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("empty page: %v", err)
		}
	}
	if _, err := free(ctx, metav1.ListOptions{Continue: "fail"}); err == nil || err.Error() != "boom" {
		t.Fatalf("error page: got %v, want boom", err)
	}
}
