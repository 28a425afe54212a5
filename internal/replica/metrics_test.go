package replica

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ringfire/ringfire/internal/localetcd"
)

// ringfire_ready says what /readyz says: 0 before the replica has joined the
// ring and read it, 1 after; and the ring's gauges are there with it.
func TestReadyMetricFollowsReadiness(t *testing.T) {
	etcd := localetcd.StartForTest(t)
	reg := prometheus.NewRegistry()
	cfg := DefaultConfig()
	cfg.ID, cfg.Etcd, cfg.Prefix = "r0", localetcd.ClientForTest(t, etcd.Endpoint()), "/metrics-test"
	cfg.Slots, cfg.LeaseTTL, cfg.Registerer = 16, 2*time.Second, reg
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gauge := func(name string) float64 {
		t.Helper()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == name && len(f.GetMetric()) == 1 {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatalf("no single series of %s", name)
		return 0
	}
	if got := gauge("ringfire_ready"); got != 0 || r.Ready() == nil {
		t.Fatalf("before Run: ringfire_ready %v, Ready() %v; want 0 and an error", got, r.Ready())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Run did not return")
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for gauge("ringfire_ready") != 1 || gauge("ringfire_slots_owned") != 16 {
		if time.Now().After(deadline) {
			t.Fatalf("ringfire_ready %v, slots owned %v after 30s; Ready() says %v",
				gauge("ringfire_ready"), gauge("ringfire_slots_owned"), r.Ready())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r.Ready() != nil {
		t.Errorf("ringfire_ready is 1 but Ready() says %v", r.Ready())
	}
	for name, want := range map[string]float64{"ringfire_ring_slots": 16, "ringfire_slots_assigned": 16, "ringfire_ring_members": 1} {
		if got := gauge(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if n, err := testutil.GatherAndCount(reg, "ringfire_slots_orphaned"); err != nil || n != 1 {
		t.Errorf("ringfire_slots_orphaned: %d series (%v), want 1", n, err)
	}
}
