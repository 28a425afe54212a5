package fencetest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/shard"
)

// ownership records, from a watch of its own on the ring's etcd, every
// tenure of every slot: a slot key is created (If CreateRevision==0) with
// the holder's id as value, attached to the holder's lease, and deleted when
// the holder releases it or its lease expires.
//
// A watch event reaches the observer some time after the change it reports,
// and that delay is not bounded. So the observer also places each creation
// in time by etcd's own order: every probeEvery it puts a probe key outside
// the ring and notes the revision the put got and the wall-clock times just
// before it was sent and just after it returned. A slot key created at
// revision c was committed after the last probe below c was sent and before
// the first probe above c returned (and before its event arrived).
type ownership struct {
	mu      sync.Mutex
	created map[int][]creation // per slot, in order of revision
	probes  []probe            // in order of revision, the observer's start first
	err     error              // why the watch stopped early, if it did
}

// creation is a slot key's creation and, if seen, deletion.
type creation struct {
	holder   string
	rev      int64
	received time.Time
	end      time.Time
}

// probe is a put of the probe key: its revision, and times that bracket
// its commit.
type probe struct {
	rev       int64
	sent, ret time.Time
}

// probeEvery is how often the observer puts a probe.
const probeEvery = 20 * time.Millisecond

// observeOwnership starts watching the slot keys under prefix until the
// test ends. Start it before any replica, so that it sees every tenure from
// its beginning.
func observeOwnership(t *testing.T, client *clientv3.Client, prefix string) *ownership {
	t.Helper()
	o := &ownership{created: map[int][]creation{}}
	ctx, cancel := context.WithCancel(context.Background())
	keys := shard.SlotsPrefix(prefix)
	sent := time.Now()
	get, err := client.Get(ctx, keys, clientv3.WithPrefix())
	if err != nil {
		cancel()
		t.Fatalf("read slot keys: %v", err)
	}
	if len(get.Kvs) > 0 {
		cancel()
		t.Fatalf("%d slot keys exist before the observer: it would not know when their tenures began", len(get.Kvs))
	}
	// Anything created later has a higher revision, so was committed after
	// the read was served, hence after it was sent.
	o.probes = append(o.probes, probe{rev: get.Header.Revision, sent: sent, ret: time.Now()})
	watch := client.Watch(ctx, keys, clientv3.WithPrefix(), clientv3.WithRev(get.Header.Revision+1))
	var wg sync.WaitGroup
	wg.Go(func() { o.follow(ctx, keys, watch) })
	wg.Go(func() { o.sendProbes(ctx, client, prefix+"-fencetest-probe") }) // outside the ring: no replica reads it
	t.Cleanup(func() { cancel(); wg.Wait() })
	return o
}

// sendProbes puts a probe every probeEvery until ctx ends.
func (o *ownership) sendProbes(ctx context.Context, client *clientv3.Client, key string) {
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		putCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		sent := time.Now()
		resp, err := client.Put(putCtx, key, sent.Format(time.RFC3339Nano))
		ret := time.Now()
		cancel()
		if err != nil {
			continue
		}
		o.mu.Lock()
		o.probes = append(o.probes, probe{rev: resp.Header.Revision, sent: sent, ret: ret})
		o.mu.Unlock()
	}
}

// follow applies watch responses until ctx ends or the watch fails.
func (o *ownership) follow(ctx context.Context, keys string, watch clientv3.WatchChan) {
	for resp := range watch {
		now := time.Now()
		if err := resp.Err(); err != nil {
			o.fail(fmt.Errorf("slot watch: %w", err))
			return
		}
		for _, ev := range resp.Events {
			slot := slotOfKey(keys, ev.Kv.Key)
			switch {
			case ev.Type == mvccpb.DELETE:
				o.end(slot, now)
			case ev.Kv.CreateRevision == ev.Kv.ModRevision:
				o.begin(slot, string(ev.Kv.Value), ev.Kv.ModRevision, now)
			default:
				// A holder never rewrites its key; if one did, the new value
				// is a new tenure.
				o.end(slot, now)
				o.begin(slot, string(ev.Kv.Value), ev.Kv.ModRevision, now)
			}
		}
	}
	if ctx.Err() == nil {
		o.fail(fmt.Errorf("slot watch closed"))
	}
}

// slotOfKey returns the slot of a slot key, or -1 for another key.
func slotOfKey(prefix string, key []byte) int {
	n, err := strconv.Atoi(strings.TrimPrefix(string(key), prefix))
	if err != nil {
		return -1
	}
	return n
}

func (o *ownership) begin(slot int, holder string, rev int64, at time.Time) {
	if slot < 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.created[slot] = append(o.created[slot], creation{holder: holder, rev: rev, received: at})
}

func (o *ownership) end(slot int, at time.Time) {
	if slot < 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	cs := o.created[slot]
	if n := len(cs); n > 0 && cs[n-1].end.IsZero() {
		cs[n-1].end = at
	}
}

func (o *ownership) fail(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.err = err
}

// snapshot returns every tenure so far, placed in time by the probes, and
// the watch's error.
func (o *ownership) snapshot() (map[int][]tenure, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[int][]tenure, len(o.created))
	for s, cs := range o.created {
		for _, c := range cs {
			earliest, latest := place(o.probes, c.rev, c.received)
			out[s] = append(out[s], tenure{Holder: c.holder, Earliest: earliest, Latest: latest, End: c.end})
		}
	}
	return out, o.err
}

// place returns the bounds of the moment revision rev was committed: after
// the last probe below it was sent, and before both the first probe above
// it returned and its event was received. probes are in order of revision
// and the first is below every slot key's.
func place(probes []probe, rev int64, received time.Time) (earliest, latest time.Time) {
	i := sort.Search(len(probes), func(i int) bool { return probes[i].rev > rev })
	latest = received
	if i < len(probes) && probes[i].ret.Before(latest) {
		latest = probes[i].ret
	}
	if i > 0 {
		earliest = probes[i-1].sent
	}
	return earliest, latest
}

// heldBy counts the slots whose current tenure is holder's.
func heldBy(tenures map[int][]tenure, holder string) int {
	n := 0
	for _, ts := range tenures {
		if last := ts[len(ts)-1]; last.Holder == holder && last.End.IsZero() {
			n++
		}
	}
	return n
}

// firstBegin returns by when holder's first tenure begun at or after t had
// certainly begun, over all slots.
func firstBegin(tenures map[int][]tenure, holder string, t time.Time) (time.Time, bool) {
	return firstOf(tenures, holder, t, func(tn tenure) time.Time { return tn.Latest })
}

// firstEarliest is the earliest moment a tenure of holder that began at or
// after t can have begun.
func firstEarliest(tenures map[int][]tenure, holder string, t time.Time) (time.Time, bool) {
	return firstOf(tenures, holder, t, func(tn tenure) time.Time { return tn.Earliest })
}

// firstOf returns the least at(tn) over the tenures tn of holder, in all
// slots, that began at or after t (their Latest is not before t), and
// whether there is one.
func firstOf(tenures map[int][]tenure, holder string, t time.Time, at func(tenure) time.Time) (time.Time, bool) {
	var first time.Time
	for _, ts := range tenures {
		for _, tn := range ts {
			if tn.Holder == holder && !tn.Latest.Before(t) && (first.IsZero() || at(tn).Before(first)) {
				first = at(tn)
			}
		}
	}
	return first, !first.IsZero()
}

// lostBy counts the tenures of holder that ended in [from, to): the slots
// it lost in that window.
func lostBy(tenures map[int][]tenure, holder string, from, to time.Time) int {
	n := 0
	for _, ts := range tenures {
		for _, tn := range ts {
			if tn.Holder == holder && !tn.End.IsZero() && !tn.End.Before(from) && tn.End.Before(to) {
				n++
			}
		}
	}
	return n
}

// placementWidths returns the median and the widest window a tenure's begin
// was placed in.
func placementWidths(tenures map[int][]tenure) (median, widest time.Duration) {
	var widths []time.Duration
	for _, ts := range tenures {
		for _, tn := range ts {
			widths = append(widths, tn.Latest.Sub(tn.Earliest))
		}
	}
	if len(widths) == 0 {
		return 0, 0
	}
	slices.Sort(widths)
	return widths[len(widths)/2].Round(time.Microsecond), widths[len(widths)-1].Round(time.Microsecond)
}
