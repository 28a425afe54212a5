package membership

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/internal/etcdloop"
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
// (compaction, lost leader, etcd restart) it reads the set again
// (etcdloop.Follow, with its default timings).
func Watch(ctx context.Context, client *clientv3.Client, prefix string, log hclog.Logger) *Watcher {
	w := &Watcher{changed: make(chan struct{})}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	keyPrefix := MembersPrefix(prefix)
	members := map[string]Info{}
	follow := etcdloop.Follow{
		Client: client, Prefix: keyPrefix, What: "the member set", Log: log.Named("members"),
		Read: func(kvs []*mvccpb.KeyValue, rev int64) bool {
			members = make(map[string]Info, len(kvs))
			for _, kv := range kvs {
				id := strings.TrimPrefix(string(kv.Key), keyPrefix)
				if info, ok := decodeInfo(id, kv.Value, kv.Lease); ok {
					members[id] = info
				}
			}
			w.set(view(members, rev))
			return true
		},
		Changed: func(events []*clientv3.Event, rev int64) bool {
			for _, ev := range events {
				id := strings.TrimPrefix(string(ev.Kv.Key), keyPrefix)
				if ev.Type == clientv3.EventTypeDelete {
					delete(members, id)
				} else if info, ok := decodeInfo(id, ev.Kv.Value, ev.Kv.Lease); ok {
					members[id] = info
				}
			}
			w.set(view(members, rev))
			return true
		},
	}
	go follow.Run(ctx)
	return w
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
