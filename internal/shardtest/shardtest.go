// Package shardtest runs a shard.Quarantine on a real etcd for the tests of the controllers
// that read it (a CronJob or a JobFlow waiting on a quarantined Job).
package shardtest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/shard"
)

// Quarantine is a shard.Quarantine following the marks under its prefix of an etcd of its
// own, until the test ends.
type Quarantine struct {
	*shard.Quarantine
	client *clientv3.Client
	prefix string
}

// StartQuarantine starts a Quarantine, its memory check off.
func StartQuarantine(t testing.TB) *Quarantine {
	t.Helper()
	ring := localetcd.StartForTest(t)
	q := &Quarantine{client: localetcd.ClientForTest(t, ring.Endpoint()), prefix: "/shardtest"}
	cfg := shard.DefaultQuarantineConfig()
	cfg.Client, cfg.Prefix, cfg.Member, cfg.MemoryBudget = q.client, q.prefix, "r0", -1
	var err error
	if q.Quarantine, err = shard.NewQuarantine(cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); q.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return q
}

// Mark writes a mark of key of dispatcher name for the object uid in etcd, as a replica
// would, and waits until the Quarantine holds it.
func (q *Quarantine) Mark(t testing.TB, name, key, uid string) {
	t.Helper()
	b, _ := json.Marshal(shard.Mark{Member: "r1", Reason: "its reconcile panicked: boom", UID: uid})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := q.client.Put(ctx, q.path(name, key), string(b)); err != nil {
		t.Fatal(err)
	}
	for _, held := q.Held(name, key, ""); !held; _, held = q.Held(name, key, "") {
		if ctx.Err() != nil {
			t.Fatalf("the mark of %s never reached the quarantine", key)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Unmark deletes the mark of key of dispatcher name from etcd.
func (q *Quarantine) Unmark(t testing.TB, name, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := q.client.Delete(ctx, q.path(name, key)); err != nil {
		t.Fatal(err)
	}
}

func (q *Quarantine) path(name, key string) string {
	return q.prefix + "/quarantine/" + name + "/" + key
}
