package shard

import (
	"strconv"
	"testing"
)

// The slot of a key is stored in the ringfire.io/slot label of objects, so it
// must never change between versions: these values are pinned.
func TestSlotOfIsPinned(t *testing.T) {
	for _, tc := range []struct {
		key   string
		slots int
		want  int
	}{
		{"default/job-a", 1024, 865},
		{"team-ml/resnet-50", 1024, 623},
		{"kube-system/x", 1024, 169},
		{"root-queue", 1024, 367}, // a cluster-scoped Queue: its bare name
		{"", 1024, 409},
		{"default/job-a", 7, 3},
		{"team-ml/resnet-50", 7, 4},
		{"root-queue", 7, 5},
		{"default/job-a", 1, 0},
	} {
		if got := SlotOf(tc.key, tc.slots); got != tc.want {
			t.Errorf("SlotOf(%q, %d) = %d, want %d", tc.key, tc.slots, got, tc.want)
		}
	}
}

func TestSlotOfWithoutSlotsIsZero(t *testing.T) {
	for _, slots := range []int{0, -1, -1024} {
		if got := SlotOf("default/job-a", slots); got != 0 {
			t.Errorf("SlotOf(_, %d) = %d, want 0", slots, got)
		}
	}
}

// Keys of one namespace spread evenly: 200 000 job keys over 1024 slots stay
// within 30% of the mean. One standard deviation of a fair hash is 7% here, so
// 30% is more than four of them, and a biased hash fails at once.
func TestSlotOfSpreadsKeys(t *testing.T) {
	const slots, keys = DefaultSlots, 200_000
	counts := make([]int, slots)
	for i := range keys {
		counts[SlotOf("default/job-"+strconv.Itoa(i), slots)]++
	}
	mean := float64(keys) / slots
	for slot, c := range counts {
		if float64(c) > 1.3*mean || float64(c) < 0.7*mean {
			t.Fatalf("slot %d holds %d keys, mean %.0f", slot, c, mean)
		}
	}
}

func FuzzSlotOf(f *testing.F) {
	f.Add("default/job-a", 1024)
	f.Add("", 0)
	f.Add("q", -5)
	f.Add("ns/\x00\xff", 1)
	f.Fuzz(func(t *testing.T, key string, slots int) {
		got := SlotOf(key, slots)
		if got < 0 || got >= max(slots, 1) {
			t.Fatalf("SlotOf(%q, %d) = %d, out of range", key, slots, got)
		}
		if again := SlotOf(key, slots); again != got {
			t.Fatalf("SlotOf(%q, %d) gave %d then %d", key, slots, got, again)
		}
	})
}

func TestSlotOfNameIsSlotOfTheKey(t *testing.T) {
	for _, tc := range []struct{ ns, name string }{{"ns", "a"}, {"", "q"}, {"default", "job-12345-worker-0"}, {"a/b", "c"}} {
		for _, slots := range []int{0, 1, 7, 1024} {
			if got, want := SlotOfName(tc.ns, tc.name, slots), SlotOf(tc.ns+"/"+tc.name, slots); got != want {
				t.Errorf("SlotOfName(%q, %q, %d) = %d, SlotOf gives %d", tc.ns, tc.name, slots, got, want)
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { SlotOfName("namespace", "name", 1024) }); n != 0 {
		t.Errorf("SlotOfName allocates %v times", n)
	}
}
