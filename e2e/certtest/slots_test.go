package certtest

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/shard"
)

// unowned follows the ring's slot keys from outside the replicas: every pollEvery it lists
// them and records, for each slot, how long it went without a holder.
type unowned struct {
	mu      sync.Mutex
	since   map[int]time.Time // slots without a holder, since when
	longest time.Duration
	worst   int // the slot of the longest
	polls   int
	errs    int
}

const pollEvery = 100 * time.Millisecond

// watchUnowned polls the slot keys of prefix until ctx ends.
func watchUnowned(ctx context.Context, cl *clientv3.Client, prefix string, slots int) *unowned {
	u := &unowned{since: map[int]time.Time{}}
	go func() {
		tick := time.NewTicker(pollEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			c, cancel := context.WithTimeout(ctx, time.Second)
			resp, err := cl.Get(c, shard.SlotsPrefix(prefix), clientv3.WithPrefix(), clientv3.WithKeysOnly())
			cancel()
			u.record(resp, err, prefix, slots, time.Now())
		}
	}()
	return u
}

func (u *unowned) record(resp *clientv3.GetResponse, err error, prefix string, slots int, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.polls++
	if err != nil {
		u.errs++ // no answer is no news: the gap, if any, is measured on the next answer
		return
	}
	held := make(map[int]bool, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if n, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), shard.SlotsPrefix(prefix))); err == nil {
			held[n] = true
		}
	}
	for n := range slots {
		since, open := u.since[n]
		switch {
		case !held[n] && !open:
			u.since[n] = now
		case held[n] && open:
			u.close(n, now.Sub(since))
			delete(u.since, n)
		}
	}
}

func (u *unowned) close(slot int, gap time.Duration) {
	if gap > u.longest {
		u.longest, u.worst = gap, slot
	}
}

// report is the longest time a slot went without a holder (gaps still open count up to now),
// that slot, and the polls made and failed.
func (u *unowned) report() (longest time.Duration, slot, polls, errs int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for n, since := range u.since {
		u.close(n, time.Since(since))
	}
	return u.longest, u.worst, u.polls, u.errs
}
