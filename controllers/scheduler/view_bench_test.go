package scheduler

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// benchInputs is what the informers of a large cluster hold: 1,000 nodes,
// 2,000 running gangs of 10 (20,000 bound pods) and 1,000 admitted gangs of
// 10 waiting (10,000 pending pods).
func benchInputs() inputs {
	in := inputs{served: []string{"volcano"}, queues: []*vcv1beta1.Queue{queueObj("default", 1)}}
	for i := range 1000 {
		in.nodes = append(in.nodes, kubeNode(fmt.Sprintf("node-%04d", i), "32"))
	}
	for g := range 3000 {
		name := fmt.Sprintf("job-%04d", g)
		phase := vcv1beta1.PodGroupRunning
		if g >= 2000 {
			phase = vcv1beta1.PodGroupInqueue
		}
		in.podGroups = append(in.podGroups, podGroupObj("ns", name, "default", 10, "1", phase))
		for i := range 10 {
			p := kubePod("ns", name, "worker", i, "1")
			if phase == vcv1beta1.PodGroupRunning {
				in.bound = append(in.bound, onNode(p, fmt.Sprintf("node-%04d", (g*10+i)%1000), corev1.PodRunning))
			} else {
				in.unbound = append(in.unbound, p)
			}
		}
	}
	return in
}

// BenchmarkBuildView times turning the informers' objects into a cycle's
// Snapshot, the part of a cycle the controller adds to Allocate: steady
// (the pods seen before, their derived tasks reused), cold (a shift's
// first cycle), and steady with one pending pod with pod affinity (every
// bound pod is then listed for inter-pod affinity).
func BenchmarkBuildView(b *testing.B) {
	in := benchInputs()
	now := time.Now()
	b.Run("steady", func(b *testing.B) {
		pods := newPodCache()
		buildView(in, assumedPods{}, &pods, now)
		b.ReportAllocs()
		for b.Loop() {
			buildView(in, assumedPods{}, &pods, now)
		}
	})
	b.Run("steady-affinity", func(b *testing.B) {
		in := benchInputs()
		in.unbound = slices.Clone(in.unbound)
		p := in.unbound[0].DeepCopy()
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{podTermOf(corev1.LabelHostname, "app=x")},
		}}
		in.unbound[0] = p
		pods := newPodCache()
		buildView(in, assumedPods{}, &pods, now)
		b.ReportAllocs()
		for b.Loop() {
			buildView(in, assumedPods{}, &pods, now)
		}
	})
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pods := newPodCache()
			buildView(in, assumedPods{}, &pods, now)
		}
	})
}
