package cache

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// forgedServer answers a slot's ConfigMap list with n forged ConfigMaps of keys keys (about
// 700 KB of JSON and 7 MB decoded each at 60,000), made fresh for each page as a decoder
// would, a page of opts.Limit at a time (all at once when it is 0, or when whole). It
// records the live heap as each page lands, before the page is cut.
type forgedServer struct {
	n, keys int
	whole   bool // ignore the limit: one page, as the cache's lists were before pages.go
	slot    int
	peak    uint64
	pages   int
}

func (f *forgedServer) funcs() ListWatchFunc {
	return ListWatchFunc{
		List: func(_ context.Context, opts metav1.ListOptions) (kruntime.Object, error) {
			from, _ := strconv.Atoi(opts.Continue)
			to := f.n
			if !f.whole && opts.Limit > 0 {
				to = min(from+int(opts.Limit), f.n)
			}
			runtime.GC()
			list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
			for i := from; i < to; i++ {
				list.Items = append(list.Items, *forgedConfigMap(fmt.Sprintf("forged-%d", i), f.slot, f.keys))
			}
			if to < f.n {
				list.Continue = strconv.Itoa(to)
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			f.peak = max(f.peak, ms.HeapAlloc)
			f.pages++
			return list, nil
		},
		Watch: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}
}

// listForged gains the slot of a sharded ConfigMap cache over f, waits for its list, and
// returns the heap's peak while it listed and what is left after it, above the heap before.
func listForged(t *testing.T, f *forgedServer, cut bool) (peak, retained uint64, took time.Duration) {
	t.Helper()
	s := NewSharded(string(ConfigMaps), newObject(ConfigMaps), f.funcs(), hclog.NewNullLogger())
	if cut {
		s.keepOwned(ConfigMaps, func(metav1.Object) owner { return owner{} }, nil)
	}
	listed := make(chan struct{})
	s.OnListed(func([]int) { close(listed) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	s.Gain(ctx, []int{f.slot})
	select {
	case <-listed:
	case <-time.After(2 * time.Minute):
		t.Fatal("the slot was never listed")
	}
	took = time.Since(start)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if got := len(s.Indexer().ListKeys()); got != f.n {
		t.Fatalf("%d ConfigMaps cached, want %d", got, f.n)
	}
	runtime.KeepAlive(s)
	return f.peak - min(f.peak, before.HeapAlloc), after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc), took
}

// 250 ConfigMaps of 60,000 keys that a tenant labelled with a live Job's slot cost the
// slot's holder, as the issue measured them, 1.71 GB held and a 1.88 GB peak when its
// successor listed the slot. Listed now, in pages sized to what they decode to and cut to
// stubs as each page lands, they cost the list a peak of about one first page (10 of them)
// and the cache a stub each. Before, the list asked for 500 a page, so all 250 in one, and
// kept them whole: measured here on 25 of them (a tenth, to spare the machine), per
// ConfigMap. Under the race detector the ConfigMaps have a tenth of the keys, and the
// measure of before is left out.
func TestForgedConfigMapsListInBoundedPages(t *testing.T) {
	const n = 250
	keys := 60000
	if raceEnabled {
		keys = 6000 // the same pages, a tenth of the work
	}
	after := &forgedServer{n: n, keys: keys, slot: 3}
	peak, retained, took := listForged(t, after, true)
	t.Logf("now: %d forged ConfigMaps listed in %d pages in %v: heap peak %.1f MB above the start, %.1f KB retained (%d bytes each)",
		n, after.pages, took.Round(time.Millisecond), float64(peak)/1e6, float64(retained)/1e3, retained/n)
	if peak > 150e6 {
		t.Errorf("the list's heap peaked %.0f MB above its start, want about one first page of 10 (70 MB) at most", float64(peak)/1e6)
	}
	if retained > n*StubBytes {
		t.Errorf("%d bytes retained for %d stubs, more than StubBytes each", retained, n)
	}

	if raceEnabled {
		return
	}
	const sample = 25
	before := &forgedServer{n: sample, keys: keys, whole: true, slot: 3}
	peak, retained, took = listForged(t, before, false)
	t.Logf("before: %d kept whole, listed in one page in %v: heap peak %.1f MB, %.1f MB retained (%.1f MB each; %d would be %.2f GB)",
		sample, took.Round(time.Millisecond), float64(peak)/1e6, float64(retained)/1e6, float64(retained)/sample/1e6, n, float64(retained)/sample*n/1e9)
}

// A reflector whose watch closed as too old relists at the version it last saw, asking the
// list whole (no limit): not older than that version. Paged, the same version would ask for
// the list at exactly it, and the watch from it would close as too old again, for ever (an API
// server restarted: its watch cache begins at the newest version). Each page is asked at the
// newest version instead, then by its continue token; a list at exactly a version stays so.
func TestWholeListAtAVersionIsPagedFromTheNewest(t *testing.T) {
	var asked []metav1.ListOptions
	list := func(_ context.Context, opts metav1.ListOptions) (kruntime.Object, error) {
		asked = append(asked, opts)
		l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "859"}}
		if opts.Continue == "" {
			l.Continue = "next"
		}
		l.Items = []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p" + strconv.Itoa(len(asked))}}}
		return l, nil
	}
	keep := func(o kruntime.Object) kruntime.Object { return o }
	lw := cutList(&pager{first: firstPods}, keep, list)

	got, err := lw(context.Background(), metav1.ListOptions{ResourceVersion: "803"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.(*corev1.PodList).Items); n != 2 {
		t.Fatalf("a list of two pages returned %d pods, want 2", n)
	}
	if len(asked) != 2 {
		t.Fatalf("%d pages asked, want 2", len(asked))
	}
	for i, o := range asked {
		if o.ResourceVersion != "" || o.ResourceVersionMatch != "" || o.Limit == 0 {
			t.Errorf("page %d asked with resourceVersion %q match %q limit %d; want the newest (\"\"), no match, a limit",
				i, o.ResourceVersion, o.ResourceVersionMatch, o.Limit)
		}
	}

	asked = nil
	if _, err := lw(context.Background(), metav1.ListOptions{ResourceVersion: "803", ResourceVersionMatch: metav1.ResourceVersionMatchExact}); err != nil {
		t.Fatal(err)
	}
	if o := asked[0]; o.ResourceVersion != "803" || o.ResourceVersionMatch != metav1.ResourceVersionMatchExact {
		t.Errorf("a list at exactly 803 asked its first page with resourceVersion %q match %q", o.ResourceVersion, o.ResourceVersionMatch)
	}
}
