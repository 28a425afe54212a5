package shard

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/internal/etcdloop"
	"github.com/ringfire/ringfire/membership"
)

// ringStore is what a tenure needs of etcd: the few operations of the
// handover protocol. etcdStore implements it over a clientv3 client; unit
// tests use fakes.
type ringStore interface {
	// CreateSlots puts the keys of slots under lease, with id as value, in
	// one transaction that succeeds only if none of the keys exists.
	// created reports whether it did; rev is the transaction's revision,
	// the create revision of every key it created.
	CreateSlots(ctx context.Context, slots []int, id string, lease clientv3.LeaseID) (rev int64, created bool, err error)
	// DeleteSlots deletes the keys of slots in one transaction that succeeds
	// only if every one of them exists under lease. deleted reports whether
	// it did.
	DeleteSlots(ctx context.Context, slots []int, lease clientv3.LeaseID) (deleted bool, err error)
	// FollowHolders sends the lease, create revision and value of every slot key
	// to out until ctx is done: all keys (reset), then each watch response's
	// changes, and all keys again whenever the watch breaks.
	FollowHolders(ctx context.Context, slots int, out chan<- holderUpdate)
	// FollowMembers follows the member set until ctx is done.
	FollowMembers(ctx context.Context) *membership.Watcher
	// Withdraw deletes this replica's member key and keeps its lease.
	Withdraw(ctx context.Context) error
}

// holderUpdate is what FollowHolders sends.
type holderUpdate struct {
	reset   bool
	holders map[int]keyHolder // on reset: every key; else changes, a zero keyHolder = deleted
}

// etcdStore is the ringStore over etcd. Each request is bounded by
// requestTimeout.
type etcdStore struct {
	client         *clientv3.Client
	member         *membership.Member
	prefix         string
	requestTimeout time.Duration
	watchRetry     etcdloop.Backoff
	log            hclog.Logger
}

// CreateSlots implements ringStore:
// If(CreateRevision == 0 for every key) Then(Put with lease, for every key).
func (e *etcdStore) CreateSlots(ctx context.Context, slots []int, id string, lease clientv3.LeaseID) (int64, bool, error) {
	cmps := make([]clientv3.Cmp, len(slots))
	puts := make([]clientv3.Op, len(slots))
	for i, s := range slots {
		k := slotKey(e.prefix, s)
		cmps[i] = clientv3.Compare(clientv3.CreateRevision(k), "=", 0)
		puts[i] = clientv3.OpPut(k, id, clientv3.WithLease(lease))
	}
	ctx, cancel := context.WithTimeout(ctx, e.requestTimeout)
	defer cancel()
	resp, err := e.client.Txn(ctx).If(cmps...).Then(puts...).Commit()
	if err != nil {
		return 0, false, fmt.Errorf("acquire slots: %w", err)
	}
	return resp.Header.Revision, resp.Succeeded, nil
}

// DeleteSlots implements ringStore:
// If(LeaseValue == lease for every key) Then(Delete every key). etcd
// compares the lease of a key that does not exist as 0, so a key already
// gone fails the comparison too.
func (e *etcdStore) DeleteSlots(ctx context.Context, slots []int, lease clientv3.LeaseID) (bool, error) {
	cmps := make([]clientv3.Cmp, len(slots))
	dels := make([]clientv3.Op, len(slots))
	for i, s := range slots {
		k := slotKey(e.prefix, s)
		cmps[i] = clientv3.Compare(clientv3.LeaseValue(k), "=", lease)
		dels[i] = clientv3.OpDelete(k)
	}
	ctx, cancel := context.WithTimeout(ctx, e.requestTimeout)
	defer cancel()
	resp, err := e.client.Txn(ctx).If(cmps...).Then(dels...).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

// FollowHolders implements ringStore with etcdloop.Follow over the slot
// keys; keys that name no slot of the ring are ignored.
func (e *etcdStore) FollowHolders(ctx context.Context, slots int, out chan<- holderUpdate) {
	send := func(u holderUpdate) bool {
		select {
		case out <- u:
			return true
		case <-ctx.Done():
			return false
		}
	}
	etcdloop.Follow{
		Client: e.client, Prefix: SlotsPrefix(e.prefix), What: "slot holders",
		ReadTimeout: e.requestTimeout, Retry: e.watchRetry, Log: e.log,
		Read: func(kvs []*mvccpb.KeyValue, _ int64) bool {
			u := holderUpdate{reset: true, holders: map[int]keyHolder{}}
			for _, kv := range kvs {
				if s, ok := parseSlotKey(e.prefix, string(kv.Key), slots); ok {
					u.holders[s] = keyHolder{Lease: clientv3.LeaseID(kv.Lease), Created: kv.CreateRevision, Holder: string(kv.Value)}
				}
			}
			return send(u)
		},
		Changed: func(events []*clientv3.Event, _ int64) bool {
			u := holderUpdate{holders: map[int]keyHolder{}}
			for _, ev := range events {
				if s, ok := parseSlotKey(e.prefix, string(ev.Kv.Key), slots); ok {
					if ev.Type == clientv3.EventTypeDelete {
						u.holders[s] = keyHolder{}
					} else {
						u.holders[s] = keyHolder{Lease: clientv3.LeaseID(ev.Kv.Lease), Created: ev.Kv.CreateRevision, Holder: string(ev.Kv.Value)}
					}
				}
			}
			return send(u)
		},
	}.Run(ctx)
}

// FollowMembers implements ringStore with membership.Watch.
func (e *etcdStore) FollowMembers(ctx context.Context) *membership.Watcher {
	return membership.Watch(ctx, e.client, e.prefix, e.log)
}

// Withdraw implements ringStore with Member.Withdraw.
func (e *etcdStore) Withdraw(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.requestTimeout)
	defer cancel()
	return e.member.Withdraw(ctx)
}
