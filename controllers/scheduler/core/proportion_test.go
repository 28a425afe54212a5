package core

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func TestDeserve(t *testing.T) {
	inf := math.Inf(1)
	// Vectors are cpu, memory, pods (pods always 0 here).
	tests := []struct {
		name     string
		total    []float64
		weights  []int32
		requests [][]float64
		caps     [][]float64
		want     [][]float64
	}{
		{
			name:     "both want more than the cluster: split by weight",
			total:    []float64{128, 512, 0},
			weights:  []int32{3, 1},
			requests: [][]float64{{1000, 4000, 0}, {1000, 4000, 0}},
			want:     [][]float64{{96, 384, 0}, {32, 128, 0}},
		},
		{
			name:     "what one queue does not need goes to the other",
			total:    []float64{128, 512, 0},
			weights:  []int32{3, 1},
			requests: [][]float64{{1000, 4000, 0}, {10, 20, 0}},
			want:     [][]float64{{118, 492, 0}, {10, 20, 0}},
		},
		{
			name:     "capability caps a queue, the rest goes to the other",
			total:    []float64{128, 512, 0},
			weights:  []int32{3, 1},
			requests: [][]float64{{1000, 4000, 0}, {1000, 4000, 0}},
			caps:     [][]float64{{50, inf, 0}, {inf, inf, 0}},
			want:     [][]float64{{50, 384, 0}, {78, 128, 0}},
		},
		{
			name:     "nobody wants it all",
			total:    []float64{128, 512, 0},
			weights:  []int32{1, 1},
			requests: [][]float64{{8, 16, 0}, {4, 4, 0}},
			want:     [][]float64{{8, 16, 0}, {4, 4, 0}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var qs []*queueState
			for i, w := range tc.weights {
				q := &queueState{
					name:      fmt.Sprintf("q%d", i),
					weight:    w,
					request:   tc.requests[i],
					realCap:   []float64{inf, inf, inf},
					allocated: make([]float64, 3),
					deserved:  make([]float64, 3),
				}
				if tc.caps != nil {
					q.realCap = tc.caps[i]
				}
				qs = append(qs, q)
			}
			deserve(qs, tc.total)
			for i, q := range qs {
				for d := range q.deserved {
					if math.Abs(q.deserved[d]-tc.want[i][d]) > 0.01 {
						t.Errorf("%s deserved %v, want %v", q.name, q.deserved, tc.want[i])
						break
					}
				}
			}
		})
	}
}

// Two queues with weights 3 and 1 compete for a full cluster; jobs run six
// to ten cycles and a backlog keeps both queues asking. What they hold
// settles at 3:1 and stays there, and the cluster stays busy. (With jobs
// much shorter than that, more of the cluster turns over per cycle than
// admission's overcommit reserve covers while admitted gangs wait a cycle
// for their pods, and utilisation dips.)
func TestQueuesShareByWeight(t *testing.T) {
	s := newSim(nodes(16, "8", "32Gi"), []Queue{openQueue("gold", 3), openQueue("bronze", 1)})
	for i := range 300 {
		for _, q := range []string{"gold", "bronze"} {
			j := gang(fmt.Sprintf("%s-%03d", q, i), q, 4, "1", "1Gi")
			j.CreationTime = epoch.Add(time.Duration(i) * time.Second)
			s.submit(j, 6+i%5)
		}
	}
	const cycles, warmup = 40, 3
	var sumRatio, sumBusy float64
	for range cycles {
		s.step()
		held := s.allocatedCPU()
		if s.cycle > warmup {
			ratio := float64(held["gold"]) / float64(max(held["bronze"], 1))
			if ratio < 2.5 || ratio > 3.5 {
				t.Errorf("cycle %d: gold/bronze = %d/%d = %.2f, want about 3", s.cycle, held["gold"], held["bronze"], ratio)
			}
			sumRatio += ratio
			sumBusy += float64(held["gold"]+held["bronze"]) / 128_000
		}
		s.finish()
	}
	if s.finished < 100 {
		t.Fatalf("only %d jobs finished; the simulation did not churn", s.finished)
	}
	n := float64(cycles - warmup)
	if avg := sumRatio / n; avg < 2.85 || avg > 3.15 {
		t.Errorf("mean gold/bronze %.2f, want 3 ± 0.15", avg)
	}
	if busy := sumBusy / n; busy < 0.95 {
		t.Errorf("mean utilisation %.2f, want the cluster busy", busy)
	}
	t.Logf("mean gold/bronze %.3f, utilisation %.3f, %d jobs finished", sumRatio/n, sumBusy/n, s.finished)
}
