package fencetest

import (
	"context"
	"fmt"
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
// the holder releases it or its lease expires. Times are when the change
// reached the observer.
type ownership struct {
	mu      sync.Mutex
	tenures map[int][]tenure // per slot, in order of begin
	err     error            // why the watch stopped early, if it did
	lag     lag              // how late changes reach the observer
}

// lag is the observer's delivery delay, measured on probes: a key outside
// the ring that the observer writes every probeEvery and watches on the same
// client, hence the same watch stream, as the slot keys. A probe's delay is
// from just before its put to its receipt, so it bounds from above the delay
// from the commit.
type lag struct {
	max    time.Duration
	probes int
}

// probeEvery is how often the observer measures its lag.
const probeEvery = 20 * time.Millisecond

// observeOwnership starts watching the slot keys under prefix until the
// test ends. Start it before any replica, so that it sees every tenure from
// its beginning.
func observeOwnership(t *testing.T, client *clientv3.Client, prefix string) *ownership {
	t.Helper()
	o := &ownership{tenures: map[int][]tenure{}}
	ctx, cancel := context.WithCancel(context.Background())
	keys := shard.SlotsPrefix(prefix)
	get, err := client.Get(ctx, keys, clientv3.WithPrefix())
	if err != nil {
		cancel()
		t.Fatalf("read slot keys: %v", err)
	}
	now := time.Now()
	for _, kv := range get.Kvs {
		o.begin(slotOfKey(keys, kv.Key), string(kv.Value), now)
	}
	watch := client.Watch(ctx, keys, clientv3.WithPrefix(), clientv3.WithRev(get.Header.Revision+1))
	probeKey := prefix + "-fencetest-probe" // outside the ring: no replica reads it
	probes := client.Watch(ctx, probeKey)
	var wg sync.WaitGroup
	wg.Go(func() { o.follow(ctx, keys, watch) })
	wg.Go(func() { o.receiveProbes(probes) })
	wg.Go(func() { sendProbes(ctx, client, probeKey) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return o
}

// sendProbes puts the time into key every probeEvery until ctx ends.
func sendProbes(ctx context.Context, client *clientv3.Client, key string) {
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		sent := time.Now().Format(time.RFC3339Nano)
		putCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, _ = client.Put(putCtx, key, sent)
		cancel()
	}
}

// receiveProbes records the delay of every probe that arrives.
func (o *ownership) receiveProbes(watch clientv3.WatchChan) {
	for resp := range watch {
		now := time.Now()
		for _, ev := range resp.Events {
			sent, err := time.Parse(time.RFC3339Nano, string(ev.Kv.Value))
			if err != nil || ev.Type != mvccpb.PUT {
				continue
			}
			o.mu.Lock()
			o.lag.probes++
			o.lag.max = max(o.lag.max, now.Sub(sent))
			o.mu.Unlock()
		}
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
				o.begin(slot, string(ev.Kv.Value), now)
			default:
				// A holder never rewrites its key; if one did, the new value
				// is a new tenure.
				o.end(slot, now)
				o.begin(slot, string(ev.Kv.Value), now)
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

func (o *ownership) begin(slot int, holder string, at time.Time) {
	if slot < 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tenures[slot] = append(o.tenures[slot], tenure{Holder: holder, Begin: at})
}

func (o *ownership) end(slot int, at time.Time) {
	if slot < 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	ts := o.tenures[slot]
	if n := len(ts); n > 0 && ts[n-1].End.IsZero() {
		ts[n-1].End = at
	}
}

func (o *ownership) fail(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.err = err
}

// snapshot returns a copy of every tenure so far, and the watch's error.
func (o *ownership) snapshot() (map[int][]tenure, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[int][]tenure, len(o.tenures))
	for s, ts := range o.tenures {
		out[s] = append([]tenure(nil), ts...)
	}
	return out, o.err
}

// measuredLag returns the largest delay of a probe so far.
func (o *ownership) measuredLag() lag {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lag
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

// firstBegin returns the earliest begin of a tenure of holder at or after
// t, over all slots.
func firstBegin(tenures map[int][]tenure, holder string, t time.Time) (time.Time, bool) {
	var first time.Time
	for _, ts := range tenures {
		for _, tn := range ts {
			if tn.Holder == holder && !tn.Begin.Before(t) && (first.IsZero() || tn.Begin.Before(first)) {
				first = tn.Begin
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
