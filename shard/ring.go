package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrRingConfig marks a ring config this replica cannot run with: an
// unreadable one, or another slot count than asked for.
var ErrRingConfig = errors.New("ring config")

// RingConfig is what a ring fixes at creation, stored at <prefix>/ring.
type RingConfig struct {
	Slots int `json:"slots"`
}

func ringKey(prefix string) string { return prefix + "/ring" }

// SlotsPrefix is where the slot keys of the ring at prefix live.
func SlotsPrefix(prefix string) string { return prefix + "/slots/" }

func slotKey(prefix string, slot int) string { return SlotsPrefix(prefix) + strconv.Itoa(slot) }

// parseSlotKey returns the slot of a slot key, or false for a key that is not one.
func parseSlotKey(prefix, key string, slots int) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(key, SlotsPrefix(prefix)))
	if err != nil || n < 0 || n >= slots || !strings.HasPrefix(key, SlotsPrefix(prefix)) {
		return 0, false
	}
	return n, true
}

// EnsureRing returns the slot count of the ring at prefix, creating the ring
// with want slots (DefaultSlots when want is 0) if it does not exist yet. The
// count is immutable: a replica asking for another count gets an error that
// says what to do.
func EnsureRing(ctx context.Context, client *clientv3.Client, prefix string, want int) (int, error) {
	if want < 0 {
		return 0, fmt.Errorf("slot count %d: must be positive", want)
	}
	create := want
	if create == 0 {
		create = DefaultSlots
	}
	val, _ := json.Marshal(RingConfig{Slots: create})
	key := ringKey(prefix)
	resp, err := client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(val))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("read ring config %s: %w", key, err)
	}
	if resp.Succeeded {
		return create, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	var have RingConfig
	if len(kvs) == 0 || json.Unmarshal(kvs[0].Value, &have) != nil || have.Slots <= 0 {
		return 0, fmt.Errorf("%w %s is unreadable; fix or delete it (only with every replica stopped)", ErrRingConfig, key)
	}
	if want != 0 && want != have.Slots {
		return 0, fmt.Errorf("%w: the ring at %q has %d slots, this replica was started with %d: the slot count is fixed when the ring is created; start with --slots=%d (or 0), or use another --etcd-prefix for a new ring",
			ErrRingConfig, prefix, have.Slots, want, have.Slots)
	}
	return have.Slots, nil
}
