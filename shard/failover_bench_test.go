package shard_test

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkFailover measures, on embedded etcd with three members and a
// 2 s lease, how long slots go without their new owner when one member
// dies (kill: its lease is never revoked and must expire) and when it
// stops gracefully (SIGTERM: withdraw, drain, revoke). Targets (docs/design.md,
// timings): kill p99 ≤ TTL + 1 s; SIGTERM ≤ 1 s. Each b.N runs rounds of both.
func BenchmarkFailover(b *testing.B) {
	const rounds = 8
	for b.Loop() {
		c := newCluster(b)
		c.start("a", c.endpoint)
		c.start("b", c.endpoint)
		var kill, term []time.Duration
		for i := range rounds {
			id := fmt.Sprintf("x%d", i)
			c.start(id, c.endpoint)
			c.awaitConverged("join "+id, time.Now(), 10*time.Second)
			at := time.Now()
			if i%2 == 0 {
				c.kill(id)
				kill = append(kill, c.awaitConverged("kill "+id, at, 10*time.Second))
			} else {
				c.stop(id)
				term = append(term, c.awaitConverged("stop "+id, at, 10*time.Second))
			}
		}
		b.ReportMetric(ms(percentile(kill, 50)), "kill-p50-ms")
		b.ReportMetric(ms(percentile(kill, 99)), "kill-p99-ms")
		b.ReportMetric(ms(percentile(term, 50)), "sigterm-p50-ms")
		b.ReportMetric(ms(percentile(term, 99)), "sigterm-p99-ms")
		b.ReportMetric(ms(testTTL), "ttl-ms")
		c.stopAll()
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile returns the p-th percentile (nearest rank) of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s) + 99) / 100
	return s[max(i-1, 0)]
}
