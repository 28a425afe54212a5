package shard

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/membership"
)

// lostAnswers is a ringStore whose creates commit in etcd but lose their
// answer: the keys are put, and the tenure is told the request failed, as
// when a client times out after etcd applied the transaction.
type lostAnswers struct {
	ringStore

	mu   sync.Mutex
	lost []int // the slots whose create committed unanswered
}

func (l *lostAnswers) CreateSlots(ctx context.Context, slots []int, id string, lease clientv3.LeaseID) (int64, bool, error) {
	rev, created, err := l.ringStore.CreateSlots(ctx, slots, id, lease)
	if err != nil || !created {
		return rev, created, err
	}
	l.mu.Lock()
	l.lost = append(l.lost, slots...)
	l.mu.Unlock()
	return 0, false, fmt.Errorf("acquire slots: %w", context.DeadlineExceeded)
}

// Every acquire of a Manager over a real etcd commits and loses its answer.
// The slot keys are then under its lease while no acquire told it so; it
// holds the slots as soon as its watch shows the keys, within TTL + 1 s of
// joining and in the same session, with the keys' create revisions as
// epochs. It does not wait for its lease to end (docs/design.md, invariant 2).
func TestManagerHoldsSlotsWhoseAcquireAnswerWasLost(t *testing.T) {
	const (
		prefix = "/lostanswer"
		slots  = 16
		ttl    = 2 * time.Second
	)
	etcd := localetcd.StartForTest(t)
	client := localetcd.ClientForTest(t, etcd.Endpoint())
	mcfg := membership.DefaultConfig()
	mcfg.Client, mcfg.Prefix, mcfg.ID = client, prefix, "me"
	mcfg.SetTTL(ttl)
	member, err := membership.New(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	scfg := DefaultManagerConfig()
	scfg.Client, scfg.Member, scfg.Prefix, scfg.Slots = client, member, prefix, slots
	m, err := NewManager(scfg)
	if err != nil {
		t.Fatal(err)
	}
	store := &lostAnswers{ringStore: m.store}
	m.store = store
	rec := &recorder{}
	m.AddListener(rec)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("the Manager did not stop within 15s")
		}
	}()

	var sess *membership.Session
	for wait := time.Now().Add(10 * time.Second); sess == nil; sess = m.session.Load() {
		if time.Now().After(wait) {
			t.Fatal("no membership session within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	joined := time.Now()
	for len(m.Status().Held) < slots {
		if time.Since(joined) > 10*time.Second {
			t.Fatalf("held %v 10s after joining, want all %d slots", m.Status().Held, slots)
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(joined)
	t.Logf("all %d slots held %v after the session began", slots, took)
	if took > ttl+time.Second {
		t.Errorf("all slots held %v after the session began, want within TTL + 1s = %v", took, ttl+time.Second)
	}
	if m.session.Load() != sess || sess.Context().Err() != nil {
		t.Fatalf("the session ended (%v) before the slots were held", context.Cause(sess.Context()))
	}

	store.mu.Lock()
	lost := slices.Sorted(slices.Values(store.lost))
	store.mu.Unlock()
	if !slices.Equal(lost, upTo(slots)) {
		t.Fatalf("creates that lost their answer: %v, want every slot's", lost)
	}
	resp, err := client.Get(context.Background(), SlotsPrefix(prefix), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != slots {
		t.Fatalf("%d slot keys in etcd, want %d", len(resp.Kvs), slots)
	}
	for _, kv := range resp.Kvs {
		s, ok := parseSlotKey(prefix, string(kv.Key), slots)
		if !ok {
			t.Fatalf("unexpected key %q", kv.Key)
		}
		if clientv3.LeaseID(kv.Lease) != sess.Lease {
			t.Errorf("slot %d's key is under lease %x, want the session's %x", s, kv.Lease, sess.Lease)
		}
		if epoch, held := m.epoch(s); !held || epoch != kv.CreateRevision {
			t.Errorf("slot %d: epoch %d (held %v), want its key's create revision %d", s, epoch, held, kv.CreateRevision)
		}
		if _, ok := m.SlotContext(s); !ok {
			t.Errorf("slot %d has no live context", s)
		}
	}
	rec.mu.Lock()
	gained := slices.Sorted(slices.Values(slices.Concat(rec.gained...)))
	rec.mu.Unlock()
	if !slices.Equal(gained, upTo(slots)) {
		t.Errorf("listeners gained %v, want every slot once", gained)
	}
}
