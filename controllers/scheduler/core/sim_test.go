package core

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// sim plays the world around the scheduler over many cycles: the job
// controller creates a gang's pods once its PodGroup leaves Pending, pods
// are bound as each result says, and jobs finish after running a while.
type sim struct {
	snap     Snapshot
	opts     Options
	cycle    int
	pods     map[string]Job    // job key → the pods to create once admitted
	podNode  map[string]string // bound pod → node
	podReq   map[string]corev1.ResourceList
	started  map[string]int // job key → cycle it started running
	lifetime map[string]int // job key → cycles it runs before finishing
	finished int
}

func newSim(ns []Node, qs []Queue) *sim {
	return &sim{
		snap:     Snapshot{Nodes: ns, Queues: qs},
		opts:     DefaultOptions(),
		pods:     map[string]Job{},
		podNode:  map[string]string{},
		podReq:   map[string]corev1.ResourceList{},
		started:  map[string]int{},
		lifetime: map[string]int{},
	}
}

// submit adds a job as the job controller would: its PodGroup Pending and
// no pods until admitted. Once running, it finishes after lifetime cycles.
func (s *sim) submit(j Job, lifetime int) {
	s.pods[j.JobKey()] = j
	s.lifetime[j.JobKey()] = lifetime
	s.snap.Jobs = append(s.snap.Jobs, asPending(j))
}

// step runs one cycle and applies its result.
func (s *sim) step() Result {
	r := Allocate(s.snap, s.opts)
	for _, b := range r.Bindings {
		s.podNode[b.Pod] = b.Node
	}
	for i := range s.snap.Jobs {
		for _, t := range s.snap.Jobs[i].Pending {
			s.podReq[t.Key] = t.Requests
		}
	}
	apply(&s.snap, r)
	for i := range s.snap.Jobs {
		j := &s.snap.Jobs[i]
		key := j.JobKey()
		if tmpl, ok := s.pods[key]; ok && j.Phase != vcv1beta1.PodGroupPending {
			j.Pending = tmpl.Pending
			delete(s.pods, key)
		}
		if _, ok := s.started[key]; !ok && j.Phase == vcv1beta1.PodGroupRunning {
			s.started[key] = s.cycle
		}
	}
	s.cycle++
	return r
}

// finish ends the jobs that have run their lifetime, freeing what their
// pods held.
func (s *sim) finish() {
	nodeAt := map[string]int{}
	for i := range s.snap.Nodes {
		nodeAt[s.snap.Nodes[i].Name] = i
	}
	s.snap.Jobs = slices.DeleteFunc(s.snap.Jobs, func(j Job) bool {
		key := j.JobKey()
		since, ok := s.started[key]
		if !ok || s.cycle-since < s.lifetime[key] {
			return false
		}
		for pod, nodeName := range s.podNode {
			if !isPodOf(pod, j) {
				continue
			}
			n := &s.snap.Nodes[nodeAt[nodeName]]
			n.Used = subPod(n.Used, s.podReq[pod])
			delete(s.podNode, pod)
		}
		s.finished++
		return true
	})
}

// allocatedCPU sums the milli-CPU each queue's jobs hold.
func (s *sim) allocatedCPU() map[string]int64 {
	out := map[string]int64{}
	for _, j := range s.snap.Jobs {
		q := j.Allocated[corev1.ResourceCPU]
		out[j.Queue] += q.MilliValue()
	}
	return out
}

func isPodOf(pod string, j Job) bool {
	prefix := j.JobKey() + "-"
	return len(pod) > len(prefix) && pod[:len(prefix)] == prefix
}

// subPod returns used less one pod of req, as a new list.
func subPod(used, req corev1.ResourceList) corev1.ResourceList {
	out := used.DeepCopy()
	for name, q := range req {
		cur := out[name]
		cur.Sub(q)
		out[name] = cur
	}
	pods := out[corev1.ResourcePods]
	pods.Sub(resource.MustParse("1"))
	out[corev1.ResourcePods] = pods
	return out
}
