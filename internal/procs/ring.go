package procs

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// WaitRing waits until every replica is ready, sees all the others, and
// holds exactly the slots the assignment gives it, with every slot held.
func WaitRing(ctx context.Context, replicas []*Replica, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last string
	for {
		held, settled, slots := 0, true, 0
		for _, r := range replicas {
			if r.Exited() {
				return fmt.Errorf("replica %s exited (log %s)", r.ID, r.LogPath)
			}
			_, code, err := r.Get(ctx, "/readyz")
			if err != nil || code != http.StatusOK {
				settled, last = false, fmt.Sprintf("%s not ready (HTTP %d, %v)", r.ID, code, err)
				continue
			}
			st, err := r.Status(ctx)
			if err != nil {
				settled, last = false, fmt.Sprintf("%s: %v", r.ID, err)
				continue
			}
			if len(st.Members) != len(replicas) || len(st.Held) != st.Assigned {
				settled = false
				last = fmt.Sprintf("%s sees %d members, holds %d of %d assigned slots", r.ID, len(st.Members), len(st.Held), st.Assigned)
			}
			held, slots = held+len(st.Held), st.Slots
		}
		if settled && held == slots && slots > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ring not settled within %v: %s (%d of %d slots held)", limit, last, held, slots)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
