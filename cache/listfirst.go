package cache

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// listFirst is what the cache's own reflectors (the slots' objects, the
// Jobs) list and watch through: a paginated list at the newest
// resourceVersion, then a watch from it, rather than client-go's default
// watch-list, which has the API server stream the initial objects as watch
// events. On a gain of a third of a ring whose slots hold 30,000 Running
// pods (BenchmarkGainPods, protobuf), the watch-list stream cost the API
// server 1.8–2× the CPU of the paginated list and took 1.3–1.9× as long, and
// the gained slots' pods are what a failover waits for. The list stays
// consistent, as the watch-list was: a newly gained slot is never read from
// an API server cache older than its previous holder's last writes.
type listFirst struct {
	toolscache.ListWatch
}

// newListFirst lists and watches with list and watch, each given the
// options the reflector asks for, with a consistent first list.
func newListFirst(list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) *listFirst {
	return &listFirst{toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			if opts.ResourceVersion == "0" {
				// The reflector's first list asks for whatever the API
				// server's cache holds; ask for the newest instead.
				opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
			}
			return list(ctx, opts)
		},
		WatchFuncWithContext: watchFn,
	}}
}

// IsWatchListSemanticsUnSupported tells client-go's reflector not to use the
// watch-list for this ListerWatcher.
func (*listFirst) IsWatchListSemanticsUnSupported() bool { return true }
