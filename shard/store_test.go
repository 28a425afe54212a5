package shard

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/internal/localetcd"
)

// etcdStore keeps ringStore's promises on a real etcd: a create takes only
// free keys, all or none, and a release deletes only keys still under the
// releasing lease (docs/design.md, "Keys in etcd").
func TestEtcdStoreCreatesAndDeletesOnlyUnderItsConditions(t *testing.T) {
	etcd := localetcd.StartForTest(t)
	client := localetcd.ClientForTest(t, etcd.Endpoint())
	ctx := context.Background()
	store := &etcdStore{client: client, prefix: "/storetest", requestTimeout: 5 * time.Second}
	lease := func() clientv3.LeaseID {
		g, err := client.Grant(ctx, 60)
		if err != nil {
			t.Fatal(err)
		}
		return g.ID
	}
	mine, other := lease(), lease()
	key := func(slot int) (clientv3.LeaseID, int64, string, bool) {
		resp, err := client.Get(ctx, slotKey("/storetest", slot))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return 0, 0, "", false
		}
		kv := resp.Kvs[0]
		return clientv3.LeaseID(kv.Lease), kv.CreateRevision, string(kv.Value), true
	}

	rev, created, err := store.CreateSlots(ctx, []int{0, 1}, "me", mine)
	if err != nil || !created {
		t.Fatalf("create free slots: created %v, %v", created, err)
	}
	for _, s := range []int{0, 1} {
		if l, cr, v, ok := key(s); !ok || l != mine || cr != rev || v != "me" {
			t.Fatalf("slot %d: lease %x, create revision %d, value %q; want %x, %d, \"me\"", s, l, cr, v, mine, rev)
		}
	}
	if _, created, err := store.CreateSlots(ctx, []int{1, 2}, "b", other); err != nil || created {
		t.Fatalf("create over a held slot: created %v, %v; want not created", created, err)
	}
	if _, _, _, ok := key(2); ok {
		t.Fatal("a create that failed wrote a key")
	}
	if deleted, err := store.DeleteSlots(ctx, []int{0, 1}, other); err != nil || deleted {
		t.Fatalf("delete under another lease: deleted %v, %v; want not deleted", deleted, err)
	}
	if _, _, _, ok := key(0); !ok {
		t.Fatal("a delete under another lease removed a key")
	}
	if deleted, err := store.DeleteSlots(ctx, []int{0, 1}, mine); err != nil || !deleted {
		t.Fatalf("delete under its lease: deleted %v, %v", deleted, err)
	}
	if deleted, err := store.DeleteSlots(ctx, []int{0}, mine); err != nil || deleted {
		t.Fatalf("delete of a key gone already: deleted %v, %v; want not deleted", deleted, err)
	}
}

// FollowHolders sends every key first, then the changes, each with its lease
// and create revision; keys that name no slot of the ring are left out.
func TestEtcdStoreFollowsHolders(t *testing.T) {
	etcd := localetcd.StartForTest(t)
	client := localetcd.ClientForTest(t, etcd.Endpoint())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := &etcdStore{client: client, prefix: "/storetest", requestTimeout: 5 * time.Second}
	g, err := client.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	var created1 int64
	for _, k := range []string{slotKey("/storetest", 1), slotKey("/storetest", 8), SlotsPrefix("/storetest") + "x"} {
		resp, err := client.Put(ctx, k, "me", clientv3.WithLease(g.ID))
		if err != nil {
			t.Fatal(err)
		}
		if k == slotKey("/storetest", 1) {
			created1 = resp.Header.Revision
		}
	}
	out := make(chan holderUpdate)
	done := make(chan struct{})
	go func() { defer close(done); store.FollowHolders(ctx, 4, out) }()
	next := func() holderUpdate {
		t.Helper()
		select {
		case u := <-out:
			return u
		case <-time.After(10 * time.Second):
			t.Fatal("no holder update within 10s")
			return holderUpdate{}
		}
	}
	if u := next(); !u.reset || len(u.holders) != 1 || u.holders[1] != (keyHolder{Lease: g.ID, Created: created1, Holder: "me"}) {
		t.Fatalf("first update %+v, want a reset with slot 1 held by me under %x, created at %d", u, g.ID, created1)
	}
	put, err := client.Put(ctx, slotKey("/storetest", 2), "me", clientv3.WithLease(g.ID))
	if err != nil {
		t.Fatal(err)
	}
	if u := next(); u.reset || len(u.holders) != 1 || u.holders[2] != (keyHolder{Lease: g.ID, Created: put.Header.Revision, Holder: "me"}) {
		t.Fatalf("update %+v, want slot 2 held by me under %x, created at %d", u, g.ID, put.Header.Revision)
	}
	if _, err := client.Delete(ctx, slotKey("/storetest", 1)); err != nil {
		t.Fatal(err)
	}
	if u := next(); u.reset || len(u.holders) != 1 || u.holders[1] != (keyHolder{}) {
		t.Fatalf("update %+v, want slot 1 deleted", u)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("FollowHolders did not return within 10s of its context ending")
	}
}
