package core

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// benchSnapshot is 1,000 nodes and 10,000 pending pods in 1,000 gangs of 10
// over four queues (weights 1–4), all admitted and waiting to be placed:
// the first cycle after a large submission.
//
// Nodes: 900 CPU nodes (32 cpu, 128Gi, 110 pods) in three zones and 100
// GPU nodes (64 cpu, 512Gi, 8 GPUs) tainted for GPU pods. Gangs: 70% plain
// (workerCPU each), 15% pinned to a zone by nodeSelector (2·workerCPU), 10%
// GPU (8 cpu, 1 GPU, tolerating the taint), 5% kept out of zone c by node
// affinity (1 cpu). With workerCPU 2 everything fits; with 4 the CPU pods
// ask 140% of the CPU nodes, and a third of the gangs wait.
func benchSnapshot(workerCPU int) Snapshot {
	var snap Snapshot
	zones := []string{"a", "b", "c"}
	for i := range 900 {
		n := newNode(fmt.Sprintf("cpu-%04d", i), "32", "128Gi")
		n.Labels["zone"] = zones[i%3]
		snap.Nodes = append(snap.Nodes, n)
	}
	for i := range 100 {
		n := newNode(fmt.Sprintf("gpu-%04d", i), "64", "512Gi")
		n.Labels["zone"] = zones[i%3]
		n.Allocatable["nvidia.com/gpu"] = resource.MustParse("8")
		n.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}
		snap.Nodes = append(snap.Nodes, n)
	}
	queues := []string{"q1", "q2", "q3", "q4"}
	for i, q := range queues {
		snap.Queues = append(snap.Queues, openQueue(q, int32(i+1)))
	}
	cpu := fmt.Sprint(workerCPU)
	for i := range 1000 {
		q := queues[i%len(queues)]
		name := fmt.Sprintf("job-%04d", i)
		var j Job
		switch k := i % 20; {
		case k < 14:
			j = gang(name, q, 10, cpu, "4Gi")
		case k < 17:
			j = gang(name, q, 10, fmt.Sprint(2*workerCPU), "16Gi")
			for t := range j.Pending {
				j.Pending[t].NodeSelector = map[string]string{"zone": zones[i%3]}
			}
		case k < 19:
			j = gang(name, q, 10, "8", "8Gi")
			for t := range j.Pending {
				j.Pending[t].Requests["nvidia.com/gpu"] = resource.MustParse("1")
				j.Pending[t].Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			}
		default:
			j = gang(name, q, 10, "1", "2Gi")
			for t := range j.Pending {
				j.Pending[t].Affinity = affinity([]corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpNotIn, "c")})
			}
		}
		j.Priority = int32(i%3) * 10
		j.CreationTime = epoch.Add(time.Duration(i) * time.Second)
		snap.Jobs = append(snap.Jobs, j)
	}
	return snap
}

// benchAffinitySnapshot is benchSnapshot(2) with inter-pod affinity: 10,000
// running pods of 100 services on the CPU nodes, 5% of them keeping the
// pods of another service off their node; of the gangs, 10% want their
// pods together on one node, 10% one per node, 5% prefer them apart.
func benchAffinitySnapshot() Snapshot {
	snap := benchSnapshot(2)
	for i := range 10000 {
		p := PlacedPod{Namespace: "ns", Node: fmt.Sprintf("cpu-%04d", i%900), Labels: map[string]string{"app": fmt.Sprintf("svc-%d", i%100)}}
		if i%20 == 0 {
			p.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				podTermOf(corev1.LabelHostname, fmt.Sprintf("app=svc-%d", (i+1)%100)),
			}}
		}
		snap.Pods = append(snap.Pods, p)
	}
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		own := podTermOf(corev1.LabelHostname, "app="+j.Name)
		for k := range j.Pending {
			t := &j.Pending[k]
			t.Labels = map[string]string{"app": j.Name}
			switch i % 20 {
			case 0, 1:
				t.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{own}}
			case 2, 3:
				t.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{own}}
			case 4:
				t.PodAntiAffinity = &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 10, PodAffinityTerm: own}}}
			}
		}
	}
	return snap
}

// BenchmarkAllocate times whole cycles:
//   - fits: every gang fits, 10,000 pods bound per cycle;
//   - oversubscribed: the CPU pods ask 140% of the CPU nodes; each queue is
//     held to its deserved share and a third of the gangs wait;
//   - backlogged: the cycle after oversubscribed, with its bindings applied:
//     nothing more fits and every waiting gang is turned down again;
//   - affinity: fits with inter-pod affinity (benchAffinitySnapshot).
//
// Each iteration runs Allocate on the same snapshot; cycle-p50-ms and
// cycle-p99-ms are over the iterations, pods-bound/s is pods bound over
// total cycle time.
func BenchmarkAllocate(b *testing.B) {
	backlog := benchSnapshot(4)
	apply(&backlog, Allocate(backlog, DefaultOptions()))
	cases := []struct {
		name string
		snap Snapshot
	}{
		{"fits", benchSnapshot(2)},
		{"oversubscribed", benchSnapshot(4)},
		{"backlogged", backlog},
		{"affinity", benchAffinitySnapshot()},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var durations []time.Duration
			bound := 0
			var r Result
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				r = Allocate(tc.snap, DefaultOptions())
				durations = append(durations, time.Since(start))
				bound += len(r.Bindings)
			}
			var total time.Duration
			for _, d := range durations {
				total += d
			}
			slices.Sort(durations)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(percentile(durations, 50)), "cycle-p50-ms")
			b.ReportMetric(ms(percentile(durations, 99)), "cycle-p99-ms")
			b.ReportMetric(float64(bound)/total.Seconds(), "pods-bound/s")
			b.ReportMetric(float64(len(r.Bindings)), "pods-bound/cycle")
			b.ReportMetric(float64(r.Stats.GangsPlaced), "gangs-placed/cycle")
		})
	}
}

// percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}
