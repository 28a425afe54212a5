package etcdloop

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Defaults of Follow's timings.
const (
	// DefaultReadTimeout bounds each full read of a Follow.
	DefaultReadTimeout = 5 * time.Second
	// DefaultRetryMin and DefaultRetryMax bound the backoff between failed
	// full reads of a Follow: 50 ms, doubling up to 2 s.
	DefaultRetryMin = 50 * time.Millisecond
	DefaultRetryMax = 2 * time.Second
)

// Follow describes the keys to follow under a prefix and where their
// changes go. Run does the following.
type Follow struct {
	// Client reaches etcd. Required.
	Client *clientv3.Client
	// Prefix is the key prefix to follow.
	Prefix string
	// What names the keys in logs, e.g. "the member set".
	What string
	// ReadTimeout bounds each full read. Default DefaultReadTimeout.
	ReadTimeout time.Duration
	// Retry is the wait between failed full reads. Default
	// DefaultRetryMin doubling up to DefaultRetryMax.
	Retry Backoff
	// Log receives a warning for each failed read. Default: none.
	Log hclog.Logger
	// Read (required) receives each full read: every key under Prefix, as
	// of revision rev. It replaces whatever was known before. Returning
	// false stops Run.
	Read func(kvs []*mvccpb.KeyValue, rev int64) bool
	// Changed (required) receives the events of one watch response, which
	// bring what was known up to revision rev. Returning false stops Run.
	Changed func(events []*clientv3.Event, rev int64) bool
}

// Run follows the keys until ctx is done or a callback returns false. It
// reads every key under the prefix, then watches from the revision after
// that read; when the watch breaks (compaction, lost leader, etcd restart)
// it reads all the keys again and watches anew. A failed read is retried
// after the backoff, which starts over after a read that succeeds.
func (f Follow) Run(ctx context.Context) {
	if f.ReadTimeout <= 0 {
		f.ReadTimeout = DefaultReadTimeout
	}
	if f.Log == nil {
		f.Log = hclog.NewNullLogger()
	}
	retry := f.Retry.Or(Backoff{Min: DefaultRetryMin, Max: DefaultRetryMax})
	for ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, f.ReadTimeout)
		resp, err := f.Client.Get(rctx, f.Prefix, clientv3.WithPrefix())
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				f.Log.Warn("cannot read "+f.What+"; will retry", "error", err, "retry_in", retry.Next())
				retry.Wait(ctx)
			}
			continue
		}
		retry.Reset()
		if !f.Read(resp.Kvs, resp.Header.Revision) {
			return
		}
		if !f.watch(ctx, resp.Header.Revision+1) {
			return
		}
	}
}

// watch passes on the watch's events from revision rev until the watch
// breaks or ends; it reports false when a callback asked to stop.
func (f Follow) watch(ctx context.Context, rev int64) bool {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range f.Client.Watch(wctx, f.Prefix, clientv3.WithPrefix(), clientv3.WithRev(rev)) {
		if err := wr.Err(); err != nil {
			f.Log.Debug("watch of "+f.What+" broke; reading it again", "error", err)
			return true
		}
		if !f.Changed(wr.Events, wr.Header.Revision) {
			return false
		}
	}
	return true
}
