package core

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// Builders for test snapshots.

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func res(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func newNode(name, cpu, mem string) Node {
	alloc := res(cpu, mem)
	alloc[corev1.ResourcePods] = resource.MustParse("110")
	return Node{Name: name, Allocatable: alloc, Labels: map[string]string{"kubernetes.io/hostname": name}}
}

func nodes(n int, cpu, mem string) []Node {
	out := make([]Node, n)
	for i := range out {
		out[i] = newNode(fmt.Sprintf("node-%02d", i), cpu, mem)
	}
	return out
}

func openQueue(name string, weight int32) Queue {
	return Queue{Name: name, Weight: weight, State: vcv1beta1.QueueStateOpen}
}

// gang is an admitted (Inqueue) job of n pods of task "worker", all needed.
func gang(name, queue string, n int, cpu, mem string) Job {
	j := Job{
		Namespace:    "ns",
		Name:         name,
		Queue:        queue,
		CreationTime: epoch,
		MinMember:    int32(n),
		Phase:        vcv1beta1.PodGroupInqueue,
	}
	addTasks(&j, "worker", n, cpu, mem)
	j.MinResources = sumRequests(j.Pending)
	return j
}

func addTasks(j *Job, task string, n int, cpu, mem string) {
	start := 0
	for _, t := range j.Pending {
		if t.Name == task {
			start++
		}
	}
	for i := start; i < start+n; i++ {
		j.Pending = append(j.Pending, Task{
			Key:      fmt.Sprintf("%s/%s-%s-%d", j.Namespace, j.Name, task, i),
			Name:     task,
			Requests: res(cpu, mem),
		})
	}
}

func sumRequests(tasks []Task) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for _, t := range tasks {
		AddList(sum, t.Requests)
	}
	return sum
}

// apply plays what the controller and the cluster would do with a result:
// pods are bound (moved from Pending to Bound, charged to their node and
// job), PodGroups take their new phase.
func apply(snap *Snapshot, r Result) {
	nodeAt := map[string]int{}
	for i := range snap.Nodes {
		nodeAt[snap.Nodes[i].Name] = i
	}
	bound := map[string]string{}
	for _, b := range r.Bindings {
		bound[b.Pod] = b.Node
	}
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		if s, ok := r.PodGroups[j.JobKey()]; ok {
			j.Phase = s.Phase
		}
		kept := j.Pending[:0]
		for _, t := range j.Pending {
			nodeName, ok := bound[t.Key]
			if !ok {
				kept = append(kept, t)
				continue
			}
			n := &snap.Nodes[nodeAt[nodeName]]
			n.Used = addPod(n.Used, t.Requests)
			if j.Bound == nil {
				j.Bound = map[string]int32{}
			}
			j.Bound[t.Name]++
			if j.Allocated == nil {
				j.Allocated = corev1.ResourceList{}
			}
			AddList(j.Allocated, t.Requests)
		}
		j.Pending = kept
	}
}

// addPod returns used plus one pod of req, as a new list.
func addPod(used, req corev1.ResourceList) corev1.ResourceList {
	out := used.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	AddList(out, req)
	AddList(out, corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")})
	return out
}

func boundNodes(r Result) map[string]string {
	m := map[string]string{}
	for _, b := range r.Bindings {
		m[b.Pod] = b.Node
	}
	return m
}

func countByGroup(r Result) map[string]int {
	m := map[string]int{}
	for _, b := range r.Bindings {
		m[b.PodGroup]++
	}
	return m
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
