package cache

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// A slot's list is gathered whole by the reflector before any of it is stored, each page
// decoded whole before anything is cut: what a list costs at its peak is the pages kept (cut)
// plus the one page being decoded. That page is sized to what its objects decode to, not to a
// count: the first page of a list is small (firstPage: 50 pods, 10 of any other kind), and each
// next one holds about pageBudget of what the objects of the page before decoded to, growing at
// most twice a page, up to maxPage. A slot of ordinary objects is listed 500 at a time after a
// few pages; one where a tenant labelled 250 ConfigMaps of 60,000 keys (7 MB each decoded) with
// the slot is listed four at a time, and never holds more than about 70 MB of them at once
// (TestForgedConfigMapsListInBoundedPages).

// Page sizes of a slot's list.
const (
	firstPods  = 50
	firstOther = 10
	maxPage    = 500
	// pageBudget is about what one page of a slot's list may decode to.
	pageBudget = 32 << 20
)

// pager sizes the pages of one reflector's lists (one batch's): it is told what each page
// decoded to and gives the next page's limit.
type pager struct {
	first int64
	next  atomic.Int64 // the next page's limit; 0 before the first page
}

// limit is the limit of a page: the first of a list (no continue token) is first.
func (p *pager) limit(continued bool) int64 {
	if n := p.next.Load(); continued && n > 0 {
		return n
	}
	return p.first
}

// landed is told that a page of n objects asked with limit decoded to about bytes: the next
// page's limit holds pageBudget of such objects, at most twice limit and maxPage, at least 1.
func (p *pager) landed(limit int64, n int, bytes int64) {
	next := int64(maxPage)
	if n > 0 && bytes > 0 {
		next = pageBudget / max(bytes/int64(n), 1)
	}
	p.next.Store(min(max(next, 1), 2*limit, maxPage))
}

// cutList returns list so that each page is asked for with the pager's limit and its objects
// cut (keep) as soon as it lands, before the next page is asked for. A list asked for whole
// (no limit: the pager's fallback when a continue token expired, or a relist at a
// resourceVersion) is paged all the same, from the newest version, and returned whole.
func cutList(p *pager, keep func(runtime.Object) runtime.Object, list func(context.Context, metav1.ListOptions) (runtime.Object, error)) func(context.Context, metav1.ListOptions) (runtime.Object, error) {
	page := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		opts.Limit = p.limit(opts.Continue != "")
		obj, err := list(ctx, opts)
		if err != nil {
			return obj, err
		}
		var bytes int64
		n, err := cutItems(obj, func(o runtime.Object) runtime.Object {
			bytes += int64(approxBytes(o))
			return keep(o)
		})
		if err != nil {
			return nil, err
		}
		p.landed(opts.Limit, n, bytes)
		return obj, nil
	}
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		if opts.Limit > 0 {
			return page(ctx, opts)
		}
		if opts.ResourceVersionMatch != metav1.ResourceVersionMatchExact {
			// Asked whole, a resourceVersion means a list not older than it; with a limit it
			// would mean the list at exactly it. The reflector relists at the version it last
			// saw when its watch closed as too old (an API server restarted, its watch cache
			// begun anew): a list at exactly that version, then a watch from it, would close
			// as too old again, for ever, with the cache stuck at that version. The newest
			// list is not older than any.
			opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
		}
		first, err := page(ctx, opts)
		if err != nil {
			return nil, err
		}
		lm, err := meta.ListAccessor(first)
		if err != nil || lm.GetContinue() == "" {
			return first, err
		}
		items, err := meta.ExtractList(first)
		if err != nil {
			return nil, err
		}
		opts.ResourceVersion, opts.ResourceVersionMatch = "", "" // not allowed with a continue token
		for cont := lm.GetContinue(); cont != ""; {
			opts.Continue = cont
			next, err := page(ctx, opts)
			if err != nil {
				return nil, err
			}
			more, err := meta.ExtractList(next)
			if err != nil {
				return nil, err
			}
			items = append(items, more...)
			nm, err := meta.ListAccessor(next)
			if err != nil {
				return nil, err
			}
			cont = nm.GetContinue()
		}
		if err := meta.SetList(first, items); err != nil {
			return nil, err
		}
		lm.SetContinue("")
		return first, nil
	}
}

// cutItems replaces each item of a list of a sharded kind by what fn returns for it (an
// object of the same type), and returns how many items there are.
func cutItems(list runtime.Object, fn func(runtime.Object) runtime.Object) (int, error) {
	switch l := list.(type) {
	case *corev1.PodList:
		return cutEach(l.Items, fn), nil
	case *scheduling.PodGroupList:
		return cutEach(l.Items, fn), nil
	case *corev1.ConfigMapList:
		return cutEach(l.Items, fn), nil
	case *corev1.ServiceList:
		return cutEach(l.Items, fn), nil
	case *corev1.PersistentVolumeClaimList:
		return cutEach(l.Items, fn), nil
	case *networkingv1.NetworkPolicyList:
		return cutEach(l.Items, fn), nil
	}
	n := 0
	err := meta.EachListItem(list, func(o runtime.Object) error { // another kind: cut in place only
		n++
		fn(o)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("cut a list: %w", err)
	}
	return n, nil
}

// cutEach puts fn(item) in the place of each item.
func cutEach[T any, PT interface {
	*T
	runtime.Object
}](items []T, fn func(runtime.Object) runtime.Object) int {
	for i := range items {
		p := PT(&items[i])
		if o, ok := fn(p).(PT); ok && o != p {
			items[i] = *o
		}
	}
	return len(items)
}

// approxBytes is about what obj takes decoded: its protobuf size where it has one (a built-in
// kind), else 2 KiB, plus what its labels, annotations and data cost as maps (mapBytes).
func approxBytes(obj runtime.Object) int {
	n := 2 << 10
	if s, ok := obj.(interface{ Size() int }); ok {
		n = s.Size()
	}
	if m, err := meta.Accessor(obj); err == nil {
		n += entryCost * (len(m.GetLabels()) + len(m.GetAnnotations()))
		if _, ok := obj.(interface{ Size() int }); !ok {
			n += mapBytes(m.GetLabels()) + mapBytes(m.GetAnnotations())
		}
	}
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		n += entryCost * (len(cm.Data) + len(cm.BinaryData))
	}
	return n
}
