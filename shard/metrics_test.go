package shard

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A tenure's publish sets the ring gauges a scrape reads: the ring's slot
// count, the slots held and assigned here, and those no member holds.
func TestTenurePublishesTheRingGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newManagerMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	tn := testTenure(t, newFakeStore(), 4, &recorder{})
	tn.metrics = m
	tn.assignment = []string{"me", "me", "me", "b"}
	tn.holders = map[int]keyHolder{0: {Lease: testLease}, 3: {Lease: 2}}
	tn.holdersOK = true
	tn.table[0].Store(&heldSlot{ctx: context.Background(), cancel: func() {}})
	tn.publish()

	want := `
# HELP ringfire_ring_slots Slots of the ring (its fixed slot count), once this replica has read the ring.
# TYPE ringfire_ring_slots gauge
ringfire_ring_slots 4
# HELP ringfire_slots_assigned Slots the assignment gives this replica: what it should hold once the ring settles.
# TYPE ringfire_slots_assigned gauge
ringfire_slots_assigned 3
# HELP ringfire_slots_owned Slots this replica holds.
# TYPE ringfire_slots_owned gauge
ringfire_slots_owned 1
# HELP ringfire_slots_orphaned Slots no member holds, as this replica sees the ring.
# TYPE ringfire_slots_orphaned gauge
ringfire_slots_orphaned 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"ringfire_ring_slots", "ringfire_slots_assigned", "ringfire_slots_owned", "ringfire_slots_orphaned"); err != nil {
		t.Error(err)
	}
}
