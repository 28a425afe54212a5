package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/membership"
)

// Snapshot is the whole ring read from etcd at one revision: for operators
// (`ringfire ring status`) and tests, not for the replicas' own decisions.
type Snapshot struct {
	Prefix     string
	Slots      int
	Revision   int64
	Members    []membership.Info
	Holders    []string // holder id per slot, "" when free
	Assignment []string // owner per slot by the assignment of Members
}

// MemberSummary is one member's line of a Snapshot.
type MemberSummary struct {
	ID       string
	Lease    clientv3.LeaseID
	Held     int
	Assigned int
}

// ReadSnapshot reads the ring at prefix in one etcd transaction.
func ReadSnapshot(ctx context.Context, client *clientv3.Client, prefix string) (Snapshot, error) {
	resp, err := client.Txn(ctx).Then(
		clientv3.OpGet(ringKey(prefix)),
		clientv3.OpGet(membership.MembersPrefix(prefix), clientv3.WithPrefix()),
		clientv3.OpGet(SlotsPrefix(prefix), clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return Snapshot{}, fmt.Errorf("read ring %s: %w", prefix, err)
	}
	snap := Snapshot{Prefix: prefix, Revision: resp.Header.Revision}
	ring := resp.Responses[0].GetResponseRange().Kvs
	if len(ring) == 0 {
		return snap, fmt.Errorf("no ring at prefix %q: no replica has started with it yet (check --etcd-prefix)", prefix)
	}
	var cfg RingConfig
	if err := json.Unmarshal(ring[0].Value, &cfg); err != nil || cfg.Slots <= 0 {
		return snap, fmt.Errorf("%w %s is unreadable: %q", ErrRingConfig, ringKey(prefix), ring[0].Value)
	}
	snap.Slots = cfg.Slots
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		id := strings.TrimPrefix(string(kv.Key), membership.MembersPrefix(prefix))
		snap.Members = append(snap.Members, membership.Info{ID: id, Lease: clientv3.LeaseID(kv.Lease)})
	}
	snap.Holders = make([]string, snap.Slots)
	for _, kv := range resp.Responses[2].GetResponseRange().Kvs {
		if s, ok := parseSlotKey(prefix, string(kv.Key), snap.Slots); ok {
			snap.Holders[s] = string(kv.Value)
		}
	}
	ids := make([]string, len(snap.Members))
	for i, m := range snap.Members {
		ids[i] = m.ID
	}
	snap.Assignment = Assign(ids, snap.Slots)
	return snap, nil
}

// Summary counts, per member, the slots it holds and the slots assigned to
// it; holders that are not members (leaving, or dead with a live lease) are
// listed too.
func (s Snapshot) Summary() []MemberSummary {
	index := map[string]int{}
	var out []MemberSummary
	line := func(id string) *MemberSummary {
		i, ok := index[id]
		if !ok {
			i = len(out)
			index[id] = i
			out = append(out, MemberSummary{ID: id})
		}
		return &out[i]
	}
	for _, m := range s.Members {
		line(m.ID).Lease = m.Lease
	}
	for slot := range s.Slots {
		if h := s.Holders[slot]; h != "" {
			line(h).Held++
		}
		if a := s.Assignment[slot]; a != "" {
			line(a).Assigned++
		}
	}
	return out
}

// InMotion lists the slots not held by their assigned member: being handed
// over, or free.
func (s Snapshot) InMotion() []int {
	var slots []int
	for slot := range s.Slots {
		if s.Holders[slot] != s.Assignment[slot] || s.Holders[slot] == "" {
			slots = append(slots, slot)
		}
	}
	return slots
}
