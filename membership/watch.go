package membership

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// View is the member set as read at an etcd revision.
type View struct {
	Members  []Info // sorted by ID
	Revision int64
}

// IDs returns the member ids, sorted.
func (v View) IDs() []string {
	ids := make([]string, len(v.Members))
	for i, m := range v.Members {
		ids[i] = m.ID
	}
	return ids
}

// Watcher follows the member set of a ring. Views may be skipped when they
// change quickly; Latest always returns the newest one read.
type Watcher struct {
	mu      sync.Mutex
	view    View
	ok      bool
	changed chan struct{}
}

// Latest returns the newest view, whether any view was read yet, and a
// channel that is closed when a newer view than this one is available.
func (w *Watcher) Latest() (v View, ok bool, changed <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.view, w.ok, w.changed
}

func (w *Watcher) set(v View) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.view, w.ok = v, true
	close(w.changed)
	w.changed = make(chan struct{})
}

// Watch follows the members of the ring at prefix until ctx is done. It reads
// the whole set, then watches from the next revision; when the watch breaks
// (compaction, lost leader, etcd restart) it reads the set again.
func Watch(ctx context.Context, client *clientv3.Client, prefix string, log hclog.Logger) *Watcher {
	w := &Watcher{changed: make(chan struct{})}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	go w.run(ctx, client, MembersPrefix(prefix), log.Named("members"))
	return w
}

func (w *Watcher) run(ctx context.Context, client *clientv3.Client, keyPrefix string, log hclog.Logger) {
	retry := newBackoff(50*time.Millisecond, 2*time.Second)
	for ctx.Err() == nil {
		members, rev, err := readMembers(ctx, client, keyPrefix)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("cannot read the member set; will retry", "error", err)
				retry.wait(ctx)
			}
			continue
		}
		retry.reset()
		w.set(view(members, rev))
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		for wr := range client.Watch(wctx, keyPrefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
			if err := wr.Err(); err != nil {
				log.Debug("member watch broke; reading the set again", "error", err)
				break
			}
			for _, ev := range wr.Events {
				id := strings.TrimPrefix(string(ev.Kv.Key), keyPrefix)
				if ev.Type == clientv3.EventTypeDelete {
					delete(members, id)
				} else if info, ok := decodeInfo(id, ev.Kv.Value, ev.Kv.Lease); ok {
					members[id] = info
				}
			}
			w.set(view(members, wr.Header.Revision))
		}
		cancel()
	}
}

func readMembers(ctx context.Context, client *clientv3.Client, keyPrefix string) (map[string]Info, int64, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := client.Get(rctx, keyPrefix, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", keyPrefix, err)
	}
	members := make(map[string]Info, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		id := strings.TrimPrefix(string(kv.Key), keyPrefix)
		if info, ok := decodeInfo(id, kv.Value, kv.Lease); ok {
			members[id] = info
		}
	}
	return members, resp.Header.Revision, nil
}

// decodeInfo reads a member value; the key and lease are the truth, the value
// adds what it can.
func decodeInfo(id string, value []byte, lease int64) (Info, bool) {
	if id == "" || strings.Contains(id, "/") {
		return Info{}, false
	}
	var info Info
	_ = json.Unmarshal(value, &info)
	info.ID, info.Lease = id, clientv3.LeaseID(lease)
	return info, true
}

func view(members map[string]Info, rev int64) View {
	v := View{Members: make([]Info, 0, len(members)), Revision: rev}
	for _, m := range members {
		v.Members = append(v.Members, m)
	}
	slices.SortFunc(v.Members, func(a, b Info) int { return strings.Compare(a.ID, b.ID) })
	return v
}
