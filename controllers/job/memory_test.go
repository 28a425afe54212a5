package job

import (
	"context"
	"testing"
	"time"

	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/shard"
)

// What the controller remembers of a Job is forgotten with the Job (forget) and with its
// slot (SlotsLost); the Jobs of other slots keep theirs.
func TestMemoryIsForgottenWithTheJobAndItsSlot(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.StatusCoalesce = time.Second })
	c := f.c
	lost, kept := "ns/a", "ns/b"
	for shard.SlotOf(kept, shard.DefaultSlots) == shard.SlotOf(lost, shard.DefaultSlots) {
		kept += "x"
	}
	now := c.clock.Now()
	remember := func(key string) {
		c.memory.delays.add(key, "pod", bus.PodPendingEvent)
		c.memory.pacer.Wait(key, now) // a count change held back since now
		c.memory.wakes.Due(key, context.Background(), now, now.Add(time.Minute))
		c.memory.told.change(key, "story")
		c.memory.waiting.change(key, "wait")
	}
	remembered := func(key string) []string {
		var what []string
		if _, ok := c.memory.delays.Get(key); ok {
			what = append(what, "delays")
		}
		if c.memory.pacer.Wait(key, now.Add(500*time.Millisecond)) < time.Second {
			what = append(what, "pacer") // still held since now, not since this look
		}
		if _, ok := c.memory.wakes.At(key); ok {
			what = append(what, "wakes")
		}
		if _, ok := c.memory.told.Get(key); ok {
			what = append(what, "told")
		}
		if _, ok := c.memory.waiting.Get(key); ok {
			what = append(what, "waiting")
		}
		return what
	}
	remember(lost)
	remember(kept)
	c.SlotsLost([]int{shard.SlotOf(lost, shard.DefaultSlots)})
	if got := remembered(lost); len(got) != 0 {
		t.Errorf("after its slot was lost, %s still remembers %v", lost, got)
	}
	if got := remembered(kept); len(got) != 5 {
		t.Errorf("%s of another slot remembers only %v", kept, got)
	}
	c.memory.forget(kept)
	if got := remembered(kept); len(got) != 0 {
		t.Errorf("after forget, %s still remembers %v", kept, got)
	}
}
