package cache

import (
	"context"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// A gain's pod list is the largest read a replica makes: at 100,000 pods a
// third of a ring is some 17,000 pods, listed a page at a time as fast as
// the API server answers. Its Jobs that have work meanwhile do not wait for
// it (PodsListing): each reads its own pods and makes its writes on the same
// API server. Config.PodListRate paces the pod lists so that they leave it
// room: a replica's pod lists together take at most that many pods a second,
// a page at a time. The first page of a list goes at once; each later page
// is asked for once the pods of the pages before it have been paid for. The
// last page (and a list the server answered whole) is handed over at once:
// waiting then would only keep the slot from being ready.

// pageBurst is the pacing's burst: the reflector's page (client-go asks for
// 500 objects a page).
const pageBurst = 500

// pacedList wraps list so that the objects of a page with more to come are
// paid for at lim's rate before the next page is asked for: the wait comes
// after the page, while the reflector holds it (a list's objects reach the
// store only once its last page is in).
func pacedList(lim *rate.Limiter, list func(context.Context, metav1.ListOptions) (runtime.Object, error)) func(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		obj, err := list(ctx, opts)
		if err != nil {
			return obj, err
		}
		if l, err := meta.ListAccessor(obj); err != nil || l.GetContinue() == "" {
			return obj, nil
		}
		n := meta.LenList(obj)
		for n > 0 {
			k := min(n, pageBurst)
			if err := lim.WaitN(ctx, k); err != nil {
				return nil, err
			}
			n -= k
		}
		return obj, nil
	}
}
