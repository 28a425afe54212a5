package core

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// randomSnapshot builds a busy, varied cluster: nodes of a few sizes, some
// tainted for GPUs, some cordoned, in zones; queues of different weights,
// one closed, one capped; jobs in every phase with gangs of several shapes,
// selectors, affinity, tolerations, minTaskMember and pods already bound.
func randomSnapshot(seed uint64, nnodes, njobs int) Snapshot {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var snap Snapshot
	zones := []string{"a", "b", "c"}
	for i := range nnodes {
		cpu := []string{"8", "16", "32"}[rng.IntN(3)]
		n := newNode(fmt.Sprintf("n-%04d", i), cpu, "64Gi")
		n.Labels["zone"] = zones[rng.IntN(len(zones))]
		if rng.IntN(8) == 0 {
			n.Allocatable["nvidia.com/gpu"] = resource.MustParse("8")
			n.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}
		}
		if rng.IntN(30) == 0 {
			n.Unschedulable = true
		}
		if rng.IntN(3) == 0 {
			n.Used = addPod(nil, res(fmt.Sprint(rng.IntN(4)), "2Gi"))
		}
		snap.Nodes = append(snap.Nodes, n)
	}
	snap.Queues = []Queue{openQueue("default", 1), openQueue("research", 3), openQueue("prod", 2)}
	closed := openQueue("archive", 1)
	closed.State = vcv1beta1.QueueStateClosed
	capped := openQueue("capped", 2)
	capped.Capability = res("40", "")
	snap.Queues = append(snap.Queues, closed, capped)
	phases := []vcv1beta1.PodGroupPhase{"", vcv1beta1.PodGroupPending, vcv1beta1.PodGroupInqueue, vcv1beta1.PodGroupInqueue, vcv1beta1.PodGroupInqueue, vcv1beta1.PodGroupRunning}
	for i := range njobs {
		q := snap.Queues[rng.IntN(len(snap.Queues))].Name
		size := 1 + rng.IntN(12)
		cpu := []string{"500m", "1", "2", "4"}[rng.IntN(4)]
		j := gang(fmt.Sprintf("job-%04d", i), q, size, cpu, "1Gi")
		j.Priority = int32(rng.IntN(3)) * 100
		j.CreationTime = epoch.Add(time.Duration(rng.IntN(1000)) * time.Second)
		j.Phase = phases[rng.IntN(len(phases))]
		j.MinMember = int32(1 + rng.IntN(size))
		if rng.IntN(5) == 0 {
			addTasks(&j, "master", 1, "1", "1Gi")
			j.MinTaskMember = map[string]int32{"master": 1, "worker": j.MinMember}
			j.MinMember++
		}
		switch rng.IntN(6) {
		case 0:
			zone := zones[rng.IntN(len(zones))]
			for k := range j.Pending {
				j.Pending[k].NodeSelector = map[string]string{"zone": zone}
			}
		case 1:
			for k := range j.Pending {
				j.Pending[k].Affinity = affinity([]corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpNotIn, "c")})
			}
		case 2:
			for k := range j.Pending {
				j.Pending[k].Requests["nvidia.com/gpu"] = resource.MustParse("1")
				j.Pending[k].Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}
			}
		}
		if j.Phase == vcv1beta1.PodGroupRunning {
			bound := int(j.MinMember) - rng.IntN(2)
			j.Bound = map[string]int32{"worker": int32(bound)}
			j.Allocated = res(fmt.Sprint(bound), fmt.Sprintf("%dGi", bound))
		}
		if j.Phase == "" || j.Phase == vcv1beta1.PodGroupPending {
			if rng.IntN(2) == 0 {
				j.Pending = nil
			}
		}
		snap.Jobs = append(snap.Jobs, j)
	}
	return snap
}

// shuffled is snap with its nodes, queues, jobs and every job's pods in
// another order.
func shuffled(snap Snapshot, seed uint64) Snapshot {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := Snapshot{
		Nodes:  append([]Node(nil), snap.Nodes...),
		Queues: append([]Queue(nil), snap.Queues...),
		Jobs:   append([]Job(nil), snap.Jobs...),
	}
	rng.Shuffle(len(out.Nodes), func(a, b int) { out.Nodes[a], out.Nodes[b] = out.Nodes[b], out.Nodes[a] })
	rng.Shuffle(len(out.Queues), func(a, b int) { out.Queues[a], out.Queues[b] = out.Queues[b], out.Queues[a] })
	rng.Shuffle(len(out.Jobs), func(a, b int) { out.Jobs[a], out.Jobs[b] = out.Jobs[b], out.Jobs[a] })
	for i := range out.Jobs {
		p := append([]Task(nil), out.Jobs[i].Pending...)
		rng.Shuffle(len(p), func(a, b int) { p[a], p[b] = p[b], p[a] })
		out.Jobs[i].Pending = p
	}
	return out
}

func TestDeterminism(t *testing.T) {
	for seed := range uint64(5) {
		snap := randomSnapshot(seed, 60, 120)
		first := Allocate(snap, DefaultOptions())
		if len(first.Bindings) == 0 || first.Stats.Unschedulable == 0 {
			t.Fatalf("seed %d: a dull snapshot (%+v); the test needs both outcomes", seed, first.Stats)
		}
		if again := Allocate(snap, DefaultOptions()); !reflect.DeepEqual(first, again) {
			t.Errorf("seed %d: two runs over the same snapshot differ", seed)
		}
		if other := Allocate(shuffled(snap, seed), DefaultOptions()); !reflect.DeepEqual(first, other) {
			t.Errorf("seed %d: the order of the snapshot's slices changed the result", seed)
		}
	}
}

// The cycle's shortcuts (capacity bounds per task shape, failed shapes,
// fast rejects) must not change what is bound or which phase a PodGroup
// gets; only the wording of some reasons may differ.
func TestShortcutsChangeNoOutcome(t *testing.T) {
	for seed := range uint64(20) {
		fast := checkShortcuts(t, seed, randomSnapshot(seed, 40, 150))
		if seed == 0 && fast.Stats.FastRejects == 0 {
			t.Errorf("seed 0: no fast rejects; the test does not exercise them")
		}
	}
}

// checkShortcuts allocates snap with the shortcuts and without them
// (exhaustive) and reports any difference in bindings, phases or reasons;
// it returns the result with the shortcuts.
func checkShortcuts(t *testing.T, seed uint64, snap Snapshot) Result {
	t.Helper()
	fast := Allocate(snap, DefaultOptions())

	c := newCycle(snap, DefaultOptions())
	c.exhaustive = true
	c.enqueue()
	c.allocate()
	slow := c.result()

	if !reflect.DeepEqual(fast.Bindings, slow.Bindings) {
		t.Errorf("seed %d: bindings differ: %d with shortcuts, %d without", seed, len(fast.Bindings), len(slow.Bindings))
		return fast
	}
	for key, f := range fast.PodGroups {
		s := slow.PodGroups[key]
		if f.Phase != s.Phase || (f.Unschedulable == nil) != (s.Unschedulable == nil) ||
			(f.Unschedulable != nil && f.Unschedulable.Reason != s.Unschedulable.Reason) {
			t.Errorf("seed %d: %s: %+v with shortcuts, %+v without", seed, key, f, s)
		}
	}
	return fast
}

// Allocate must not write to the snapshot it is given.
func TestSnapshotUntouched(t *testing.T) {
	snap := randomSnapshot(7, 30, 60)
	before := Snapshot{Nodes: deepNodes(snap.Nodes), Queues: snap.Queues, Jobs: deepJobs(snap.Jobs)}
	Allocate(snap, DefaultOptions())
	if !reflect.DeepEqual(before.Nodes, snap.Nodes) || !reflect.DeepEqual(before.Jobs, snap.Jobs) {
		t.Error("Allocate changed its snapshot")
	}
}

func deepNodes(ns []Node) []Node {
	out := make([]Node, len(ns))
	for i, n := range ns {
		out[i] = n
		out[i].Allocatable = n.Allocatable.DeepCopy()
		out[i].Used = n.Used.DeepCopy()
	}
	return out
}

func deepJobs(js []Job) []Job {
	out := make([]Job, len(js))
	for i, j := range js {
		out[i] = j
		out[i].Pending = append([]Task(nil), j.Pending...)
		for k := range out[i].Pending {
			out[i].Pending[k].Requests = j.Pending[k].Requests.DeepCopy()
		}
		out[i].Bound = map[string]int32{}
		for name, n := range j.Bound {
			out[i].Bound[name] = n
		}
		if j.Bound == nil {
			out[i].Bound = nil
		}
	}
	return out
}
