package shard

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
)

func BenchmarkSlotOf(b *testing.B) {
	keys := make([]string, 4096)
	for i := range keys {
		keys[i] = "team-" + strconv.Itoa(i%17) + "/job-" + strconv.Itoa(i)
	}
	i := 0
	for b.Loop() {
		SlotOf(keys[i%len(keys)], DefaultSlots)
		i++
	}
}

// BenchmarkAssign times Assign for N members and S slots (ns/op), then
// reports the quality of the tables over 13 member sets (one per family and
// seed): max/mean is the worst balance; join and leave are slots moved per
// join (N-1→N) and per leave (N→N-1) over the ideal S/N, mean and worst.
func BenchmarkAssign(b *testing.B) {
	for _, n := range []int{3, 8, 32, 128} {
		for _, slots := range []int{1024, 4096, 16384} {
			b.Run(fmt.Sprintf("N=%d/S=%d", n, slots), func(b *testing.B) {
				ids := memberNames("statefulset", 1, n)
				for b.Loop() {
					Assign(ids, slots)
				}
				reportQuality(b, n, slots)
			})
		}
	}
}

func reportQuality(b *testing.B, n, slots int) {
	var balance, joinSum, joinWorst, leaveSum, leaveWorst float64
	sets := 0
	memberSets(4, n, func(name string, ids []string) {
		r := rand.New(rand.NewPCG(uint64(n), uint64(slots)))
		full := Assign(ids, slots)
		balance = max(balance, maxOverMean(full, n))
		join := movedOverIdeal(Assign(ids[:n-1], slots), full, n-1, n)
		leave := movedOverIdeal(full, Assign(without(ids, r.IntN(n)), slots), n, n-1)
		joinSum, joinWorst = joinSum+join, max(joinWorst, join)
		leaveSum, leaveWorst = leaveSum+leave, max(leaveWorst, leave)
		sets++
	})
	b.ReportMetric(balance, "max/mean")
	b.ReportMetric(joinSum/float64(sets), "join-moved/ideal")
	b.ReportMetric(joinWorst, "join-worst/ideal")
	b.ReportMetric(leaveSum/float64(sets), "leave-moved/ideal")
	b.ReportMetric(leaveWorst, "leave-worst/ideal")
}
