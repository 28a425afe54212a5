package bench

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// reportSettle reports how the load ended: when every Job had finished,
// and when the counts were taken.
func reportSettle(b *testing.B, m measurement, c config, replicas []*replicaProcess) string {
	var t strings.Builder
	if m.finished > 0 {
		b.ReportMetric(m.finished.Seconds(), "s-to-all-jobs-finished")
		fmt.Fprintf(&t, "last Job seen finished %.1fs after the first create: %s; per Job, create → seen finished: p50 %.1fs, p99 %.1fs\n",
			m.finished.Seconds(), describePhases(m.phases), percentile(m.finishLatency, 50).Seconds(), percentile(m.finishLatency, 99).Seconds())
		t.WriteString(reportPodTimes(b, m, replicas))
	} else if m.loadErr == nil {
		fmt.Fprintf(&t, "pods run %v, past the %v the benchmark waits: Jobs not waited for\n", c.podRun, c.settle)
	}
	if m.countedAt > 0 {
		fmt.Fprintf(&t, "final counts taken %.1fs after the first create, after %v without a write; the replicas wrote %.0f more in the %.1fs after them\n",
			m.countedAt.Seconds(), 2*c.quiet, m.lateWrites, m.lateFor.Seconds())
	}
	if m.settleErr != nil {
		b.Errorf("after the load: %v", m.settleErr)
		fmt.Fprintf(&t, "after the load: %v\n", m.settleErr)
	}
	return t.String()
}

// reportWrites reports the API writes of the load, per Job, by writer, as
// metrics (ringfire's budget) and as a table.
func reportWrites(b *testing.B, m measurement) string {
	if m.countErr != nil {
		b.Errorf("counting requests: %v", m.countErr)
	}
	if m.before.apiserver == nil || m.after.apiserver == nil {
		return "API writes not counted: no reading of the API server's metrics\n"
	}
	others, byComponent := othersEvents(m.eventsBefore, m.eventsAfter)
	a := attribute(m.jobs,
		m.after.apiserver.minus(m.before.apiserver),
		m.after.bench.minus(m.before.bench),
		others)
	bud := a.budget()
	n := float64(m.jobs)
	b.ReportMetric(bud.writes/n, "writes/job")
	b.ReportMetric(bud.conflicts/n, "409s/job")
	b.ReportMetric(100*bud.refusedCreates/max(bud.creates, 1), "409-%-of-creates")
	b.ReportMetric(bud.jobStatusWrites/n, "job-status-writes/job")
	b.ReportMetric(bud.podPosts/n, "pod-posts/job")
	b.ReportMetric(bud.podGroupWrites/n, "podgroup-writes/job")
	b.ReportMetric(bud.eventWrites/n, "event-writes/job")

	var t strings.Builder
	t.WriteString(a.table())
	fmt.Fprintf(&t, "ringfire per Job: %.2f writes but pod creates and bindings (budget 10), %.2f answered 409; %.0f of %.0f creates refused 409 (%.2f%%, budget 1%%); "+
		"Job status %.2f, pod POSTs %.2f, PodGroup writes %.2f, Event writes %.2f\n",
		bud.writes/n, bud.conflicts/n, bud.refusedCreates, bud.creates, 100*bud.refusedCreates/max(bud.creates, 1),
		bud.jobStatusWrites/n, bud.podPosts/n, bud.podGroupWrites/n, bud.eventWrites/n)
	fmt.Fprintf(&t, "Event writes of other reporters over the load (taken out of the events rows): %s\n", describeComponents(byComponent))
	fmt.Fprintf(&t, "Events ringfire made, by reporter and reason: %s\n", describeComponents(ringfireEvents(m.eventsBefore, m.eventsAfter)))
	t.WriteString(a.crossCheck(m.after.replicas.minus(m.before.replicas)))
	return t.String()
}

// reportPodTimes says where the time from the last pod created to the last
// Job finished went: the last binding of ringfire's scheduler (sampled
// each second), the last pod started and ended on its node (kwok's
// timestamps, whole seconds).
func reportPodTimes(b *testing.B, m measurement, replicas []*replicaProcess) string {
	since := func(at time.Time) float64 { return at.Sub(m.res.start).Seconds() }
	var t strings.Builder
	fmt.Fprintf(&t, "after the first create: last pod created %.1fs", m.res.allPods.Seconds())
	bound, boundAt := 0.0, time.Time{}
	for _, r := range replicas {
		n, at := r.lastBind()
		bound += n
		if at.After(boundAt) {
			boundAt = at
		}
	}
	if bound > 0 {
		fmt.Fprintf(&t, ", last bound by ringfire's scheduler %.0fs (±1s; %.0f pods bound since start)", since(boundAt), bound)
	}
	if !m.pods.lastStarted.IsZero() {
		fmt.Fprintf(&t, ", last started %.0fs", since(m.pods.lastStarted))
	}
	if !m.pods.lastEnded.IsZero() {
		b.ReportMetric(since(m.pods.lastEnded), "s-to-last-pod-ended")
		fmt.Fprintf(&t, ", last ended %.0fs (%d ended)", since(m.pods.lastEnded), m.pods.ended)
	}
	fmt.Fprintf(&t, ", last Job finished %.1fs\n", m.finished.Seconds())
	return t.String()
}
