package core

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

func TestGangPlacement(t *testing.T) {
	tests := []struct {
		name      string
		nodes     []Node
		job       Job
		bound     int
		phase     vcv1beta1.PodGroupPhase
		reason    string
		messageIn []string
	}{
		{
			name:  "a gang of 8 that fits binds all 8",
			nodes: nodes(4, "4", "16Gi"),
			job:   gang("fits", "default", 8, "2", "4Gi"),
			bound: 8,
			phase: vcv1beta1.PodGroupRunning,
		},
		{
			name:   "a gang of 8 with room for 6 binds nothing and says why",
			nodes:  nodes(3, "4", "16Gi"),
			job:    gang("short", "default", 8, "2", "4Gi"),
			phase:  vcv1beta1.PodGroupInqueue,
			reason: vcv1beta1.NotEnoughResourcesReason,
			messageIn: []string{
				"2/8 tasks in gang unschedulable: pod group is not ready, 0 bound, 6 placeable, 8 minAvailable",
				"2 tasks: 0/3 nodes are unavailable: 3 Insufficient cpu",
			},
		},
		{
			name:   "memory short",
			nodes:  nodes(2, "16", "8Gi"),
			job:    gang("mem", "default", 4, "1", "6Gi"),
			phase:  vcv1beta1.PodGroupInqueue,
			reason: vcv1beta1.NotEnoughResourcesReason,
			messageIn: []string{
				"2/4 tasks in gang unschedulable",
				"0/2 nodes are unavailable: 2 Insufficient memory",
			},
		},
		{
			name:   "pods count short",
			nodes:  withPods(nodes(2, "16", "64Gi"), "2"),
			job:    gang("pods", "default", 5, "1", "1Gi"),
			phase:  vcv1beta1.PodGroupInqueue,
			reason: vcv1beta1.NotEnoughResourcesReason,
			messageIn: []string{
				"1/5 tasks in gang unschedulable",
				"2 Too many pods",
			},
		},
		{
			name:   "a resource no node offers",
			nodes:  nodes(2, "16", "64Gi"),
			job:    withRequest(gang("gpu", "default", 2, "1", "1Gi"), "nvidia.com/gpu", "1"),
			phase:  vcv1beta1.PodGroupInqueue,
			reason: vcv1beta1.NotEnoughResourcesReason,
			messageIn: []string{
				"2/2 tasks in gang unschedulable",
				"2 Insufficient nvidia.com/gpu",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := Snapshot{Nodes: tc.nodes, Queues: []Queue{openQueue("default", 1)}, Jobs: []Job{tc.job}}
			r := Allocate(snap, DefaultOptions())
			if len(r.Bindings) != tc.bound {
				t.Fatalf("bound %d pods, want %d: %+v", len(r.Bindings), tc.bound, r.Bindings)
			}
			s := r.PodGroups[tc.job.JobKey()]
			if s.Phase != tc.phase {
				t.Errorf("phase %s, want %s", s.Phase, tc.phase)
			}
			if tc.reason == "" {
				if s.Unschedulable != nil {
					t.Errorf("unexpected condition %+v", s.Unschedulable)
				}
				return
			}
			if s.Unschedulable == nil || s.Unschedulable.Reason != tc.reason {
				t.Fatalf("condition %+v, want reason %s", s.Unschedulable, tc.reason)
			}
			for _, want := range tc.messageIn {
				if !strings.Contains(s.Unschedulable.Message, want) {
					t.Errorf("message %q\nlacks %q", s.Unschedulable.Message, want)
				}
			}
		})
	}
}

func withPods(ns []Node, pods string) []Node {
	for i := range ns {
		ns[i].Allocatable[corev1.ResourcePods] = mustQuantity(pods)
	}
	return ns
}

func withRequest(j Job, name corev1.ResourceName, q string) Job {
	for i := range j.Pending {
		j.Pending[i].Requests[name] = mustQuantity(q)
	}
	return j
}

func TestGangRunsInFullWhenRoomAppears(t *testing.T) {
	snap := Snapshot{
		Nodes:  nodes(3, "4", "16Gi"),
		Queues: []Queue{openQueue("default", 1)},
		Jobs:   []Job{gang("g8", "default", 8, "2", "4Gi")},
	}
	r := Allocate(snap, DefaultOptions())
	if len(r.Bindings) != 0 {
		t.Fatalf("bound %d pods of a gang that cannot complete", len(r.Bindings))
	}
	apply(&snap, r)
	snap.Nodes = append(snap.Nodes, newNode("node-99", "4", "16Gi"))
	r = Allocate(snap, DefaultOptions())
	if len(r.Bindings) != 8 {
		t.Fatalf("bound %d pods once room appeared, want 8", len(r.Bindings))
	}
	if s := r.PodGroups["ns/g8"]; s.Phase != vcv1beta1.PodGroupRunning || s.Unschedulable != nil || s.Bound != 8 {
		t.Errorf("status %+v, want Running with 8 bound and no condition", s)
	}
}

func TestBestFitPacksNodes(t *testing.T) {
	snap := Snapshot{
		Nodes:  []Node{newNode("a", "8", "32Gi"), newNode("b", "8", "32Gi"), newNode("c", "8", "32Gi")},
		Queues: []Queue{openQueue("default", 1)},
		Jobs:   []Job{gang("small", "default", 4, "2", "1Gi")},
	}
	// b is already half full: best fit fills it before touching empty nodes.
	snap.Nodes[1].Used = addPod(nil, res("4", "4Gi"))
	r := Allocate(snap, DefaultOptions())
	got := map[string]int{}
	for _, b := range r.Bindings {
		got[b.Node]++
	}
	if got["b"] != 2 || got["a"] != 2 || got["c"] != 0 {
		t.Errorf("placements per node %v, want b:2 (the fuller node first) a:2", got)
	}
}

func TestExtraTasksPlacedAfterOtherGangs(t *testing.T) {
	elastic := gang("elastic", "default", 4, "1", "1Gi")
	elastic.MinMember = 2 // two needed, two extra
	other := gang("other", "default", 2, "1", "1Gi")
	other.CreationTime = epoch.Add(time.Minute) // younger than elastic
	snap := Snapshot{
		Nodes:  nodes(1, "4", "16Gi"),
		Queues: []Queue{openQueue("default", 1)},
		Jobs:   []Job{elastic, other},
	}
	r := Allocate(snap, DefaultOptions())
	got := countByGroup(r)
	// elastic (older) gets its gang of 2 first, then other's gang of 2 goes
	// before elastic's extras; the node is then full.
	if got["ns/elastic"] != 2 || got["ns/other"] != 2 {
		t.Fatalf("bound per job %v, want elastic:2 other:2", got)
	}
	for _, key := range []string{"ns/elastic", "ns/other"} {
		if s := r.PodGroups[key]; s.Phase != vcv1beta1.PodGroupRunning || s.Unschedulable != nil {
			t.Errorf("%s: %+v, want Running", key, s)
		}
	}
	// Later, room appears: the extras are placed one by one.
	apply(&snap, r)
	snap.Nodes = append(snap.Nodes, newNode("node-99", "1", "16Gi"))
	r = Allocate(snap, DefaultOptions())
	if got := countByGroup(r); got["ns/elastic"] != 1 {
		t.Fatalf("extras bound %v, want one of elastic's (room for one)", got)
	}
	if s := r.PodGroups["ns/elastic"]; s.Phase != vcv1beta1.PodGroupRunning || s.Unschedulable != nil {
		t.Errorf("elastic: %+v, want Running without a condition while extras wait", s)
	}
}

func TestMinTaskMember(t *testing.T) {
	// A master must run on a "role=master" node, which is full; the four
	// workers would fit, but the gang needs its master.
	mk := func(minMember int32) Snapshot {
		j := Job{Namespace: "ns", Name: "mpi", Queue: "default", CreationTime: epoch, MinMember: minMember,
			MinTaskMember: map[string]int32{"master": 1, "worker": 3}, Phase: vcv1beta1.PodGroupInqueue}
		addTasks(&j, "master", 1, "2", "1Gi")
		addTasks(&j, "worker", 4, "1", "1Gi")
		j.Pending[0].NodeSelector = map[string]string{"role": "master"}
		master := newNode("master-0", "1", "4Gi")
		master.Labels["role"] = "master"
		return Snapshot{
			Nodes:  []Node{master, newNode("worker-0", "8", "16Gi")},
			Queues: []Queue{openQueue("default", 1)},
			Jobs:   []Job{j},
		}
	}
	r := Allocate(mk(4), DefaultOptions())
	if len(r.Bindings) != 0 {
		t.Fatalf("bound %v without the master the gang needs", r.Bindings)
	}
	s := r.PodGroups["ns/mpi"]
	if s.Unschedulable == nil || !strings.Contains(s.Unschedulable.Message, "1 task: 0/2 nodes are unavailable: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector") {
		t.Errorf("condition %+v", s.Unschedulable)
	}
	// minMember below the sum of minTaskMember: per-task minimums are not
	// enforced (Volcano's rule), so three workers make the gang.
	r = Allocate(mk(3), DefaultOptions())
	if got := countByGroup(r)["ns/mpi"]; got != 4 {
		t.Errorf("bound %d, want the 4 workers (3 for the gang, 1 extra)", got)
	}
}

func TestMinTaskMemberOrdersNeededTasksFirst(t *testing.T) {
	// Room for exactly 3 pods: the gang needs 1 ps and 2 workers; without
	// per-task order the first three (workers) would be taken.
	j := Job{Namespace: "ns", Name: "tf", Queue: "default", CreationTime: epoch, MinMember: 3,
		MinTaskMember: map[string]int32{"ps": 1, "worker": 2}, Phase: vcv1beta1.PodGroupInqueue}
	addTasks(&j, "worker", 4, "1", "1Gi")
	addTasks(&j, "ps", 1, "1", "1Gi")
	snap := Snapshot{Nodes: nodes(1, "3", "16Gi"), Queues: []Queue{openQueue("default", 1)}, Jobs: []Job{j}}
	r := Allocate(snap, DefaultOptions())
	got := boundNodes(r)
	if len(got) != 3 || got["ns/tf-ps-0"] == "" {
		t.Errorf("bound %v, want ps-0 and two workers", got)
	}
}

func TestNotEnoughPods(t *testing.T) {
	j := gang("partial", "default", 2, "1", "1Gi")
	j.MinMember = 4 // the job controller has created 2 of 4 pods so far
	snap := Snapshot{Nodes: nodes(2, "8", "16Gi"), Queues: []Queue{openQueue("default", 1)}, Jobs: []Job{j}}
	r := Allocate(snap, DefaultOptions())
	s := r.PodGroups["ns/partial"]
	if len(r.Bindings) != 0 || s.Unschedulable == nil || s.Unschedulable.Reason != vcv1beta1.NotEnoughPodsReason {
		t.Fatalf("bindings %v, status %+v; want none and %s", r.Bindings, s, vcv1beta1.NotEnoughPodsReason)
	}
	if want := "valid: 2, min: 4"; !strings.Contains(s.Unschedulable.Message, want) {
		t.Errorf("message %q lacks %q", s.Unschedulable.Message, want)
	}
}

func TestJustAdmittedGangHasNoCondition(t *testing.T) {
	snap := Snapshot{Nodes: nodes(2, "8", "16Gi"), Queues: []Queue{openQueue("default", 1)},
		Jobs: []Job{asPending(gang("new", "default", 4, "1", "1Gi"))}}
	r := Allocate(snap, DefaultOptions())
	if s := r.PodGroups["ns/new"]; s.Phase != vcv1beta1.PodGroupInqueue || s.Unschedulable != nil {
		t.Errorf("status %+v, want Inqueue and no condition while its pods are created", s)
	}
}

func TestMinTaskMemberValidity(t *testing.T) {
	j := Job{Namespace: "ns", Name: "ps", Queue: "default", CreationTime: epoch, MinMember: 3,
		MinTaskMember: map[string]int32{"ps": 1, "worker": 2}, Phase: vcv1beta1.PodGroupInqueue}
	addTasks(&j, "worker", 3, "1", "1Gi") // the ps pod is not created yet
	snap := Snapshot{Nodes: nodes(2, "8", "16Gi"), Queues: []Queue{openQueue("default", 1)}, Jobs: []Job{j}}
	r := Allocate(snap, DefaultOptions())
	s := r.PodGroups["ns/ps"]
	if len(r.Bindings) != 0 || s.Unschedulable == nil || s.Unschedulable.Reason != vcv1beta1.NotEnoughPodsOfTaskReason ||
		!strings.Contains(s.Unschedulable.Message, "task ps") {
		t.Errorf("bindings %v, status %+v; want none and %s for ps", r.Bindings, s, vcv1beta1.NotEnoughPodsOfTaskReason)
	}
}

func TestRunningGangThatLostPodsGoesBackToPending(t *testing.T) {
	j := gang("lost", "default", 1, "4", "1Gi") // one pod to replace
	j.MinMember = 4
	j.Phase = vcv1beta1.PodGroupRunning
	j.Bound = map[string]int32{"worker": 3}
	snap := Snapshot{Nodes: nodes(1, "2", "16Gi"), Queues: []Queue{openQueue("default", 1)}, Jobs: []Job{j}}
	r := Allocate(snap, DefaultOptions())
	if s := r.PodGroups["ns/lost"]; s.Phase != vcv1beta1.PodGroupPending || s.Unschedulable == nil {
		t.Errorf("status %+v, want Pending with a condition", s)
	}
	// With room, the replacement pod completes the gang again.
	snap.Nodes = nodes(1, "8", "16Gi")
	r = Allocate(snap, DefaultOptions())
	if s := r.PodGroups["ns/lost"]; s.Phase != vcv1beta1.PodGroupRunning || s.Bound != 1 {
		t.Errorf("status %+v, want Running with 1 bound", s)
	}
}

func TestPriorityWithinQueue(t *testing.T) {
	low := gang("low", "default", 4, "2", "1Gi")
	high := gang("high", "default", 4, "2", "1Gi")
	high.Priority = 100
	high.CreationTime = epoch.Add(time.Hour) // younger, but more important
	snap := Snapshot{Nodes: nodes(2, "4", "16Gi"), Queues: []Queue{openQueue("default", 1)}, Jobs: []Job{low, high}}

	t.Run("placement", func(t *testing.T) {
		r := Allocate(snap, DefaultOptions())
		got := countByGroup(r)
		if got["ns/high"] != 4 || got["ns/low"] != 0 {
			t.Errorf("bound %v, want high:4 low:0", got)
		}
	})
	t.Run("admission", func(t *testing.T) {
		s := snap
		s.Jobs = []Job{asPending(low), asPending(high)}
		// Admission room for one gang only (overcommit 1).
		r := Allocate(s, Options{OvercommitFactor: 1})
		if got := r.PodGroups["ns/high"]; got.Phase != vcv1beta1.PodGroupRunning && got.Phase != vcv1beta1.PodGroupInqueue {
			t.Errorf("high: %+v, want admitted", got)
		}
		got := r.PodGroups["ns/low"]
		if got.Phase != vcv1beta1.PodGroupPending || got.Unschedulable == nil ||
			!strings.Contains(got.Unschedulable.Message, "resource in cluster is overused") {
			t.Errorf("low: %+v, want Pending, cluster overused", got)
		}
	})
}

// asPending is a job whose PodGroup is not yet admitted, so it has no pods.
func asPending(j Job) Job {
	j.Phase = vcv1beta1.PodGroupPending
	j.Pending = nil
	return j
}

func TestClosedQueueAdmitsNothing(t *testing.T) {
	for _, state := range []vcv1beta1.QueueState{vcv1beta1.QueueStateClosed, vcv1beta1.QueueStateClosing} {
		t.Run(string(state), func(t *testing.T) {
			q := openQueue("q", 1)
			q.State = state
			snap := Snapshot{
				Nodes:  nodes(4, "8", "32Gi"),
				Queues: []Queue{q},
				Jobs:   []Job{asPending(gang("new", "q", 2, "1", "1Gi")), gang("admitted", "q", 2, "1", "1Gi")},
			}
			r := Allocate(snap, DefaultOptions())
			if len(r.Bindings) != 0 {
				t.Errorf("bound %v in a %s queue", r.Bindings, state)
			}
			for _, key := range []string{"ns/new", "ns/admitted"} {
				s := r.PodGroups[key]
				if s.Unschedulable == nil || s.Unschedulable.Reason != ReasonQueueNotOpen {
					t.Errorf("%s: %+v, want %s", key, s, ReasonQueueNotOpen)
				}
			}
			if s := r.PodGroups["ns/new"]; s.Phase != vcv1beta1.PodGroupPending {
				t.Errorf("new: phase %s, want Pending", s.Phase)
			}
			// Reopened, it admits and places again.
			snap.Queues[0].State = vcv1beta1.QueueStateOpen
			r = Allocate(snap, DefaultOptions())
			if r.PodGroups["ns/new"].Phase != vcv1beta1.PodGroupInqueue || countByGroup(r)["ns/admitted"] != 2 {
				t.Errorf("reopened: %+v, bindings %v", r.PodGroups, r.Bindings)
			}
		})
	}
}

func TestMissingQueue(t *testing.T) {
	snap := Snapshot{Nodes: nodes(1, "8", "32Gi"), Jobs: []Job{asPending(gang("lost", "nope", 1, "1", "1Gi"))}}
	r := Allocate(snap, DefaultOptions())
	s := r.PodGroups["ns/lost"]
	if s.Phase != vcv1beta1.PodGroupPending || s.Unschedulable == nil || !strings.Contains(s.Unschedulable.Message, "queue nope does not exist") {
		t.Errorf("status %+v", s)
	}
}

func TestQueueCapabilityCapsAllocation(t *testing.T) {
	q := openQueue("capped", 1)
	q.Capability = res("4", "")
	snap := Snapshot{
		Nodes:  nodes(4, "8", "32Gi"),
		Queues: []Queue{q},
		Jobs:   []Job{gang("a", "capped", 4, "1", "1Gi"), gang("b", "capped", 4, "1", "1Gi")},
	}
	r := Allocate(snap, DefaultOptions())
	got := countByGroup(r)
	if got["ns/a"] != 4 || got["ns/b"] != 0 {
		t.Fatalf("bound %v, want a:4 b:0 under a capability of 4 cpu", got)
	}
	s := r.PodGroups["ns/b"]
	if s.Unschedulable == nil || !strings.Contains(s.Unschedulable.Message, "queue capped") {
		t.Errorf("b: %+v, want the queue named as the reason", s)
	}
}

func TestAdmissionLimits(t *testing.T) {
	capped := openQueue("capped", 1)
	capped.Capability = res("6", "")
	tests := []struct {
		name     string
		queues   []Queue
		jobs     []Job
		admitted []string
		refused  map[string]string // job → message part
	}{
		{
			name:     "minResources fit the cluster",
			queues:   []Queue{openQueue("default", 1)},
			jobs:     []Job{asPending(gang("a", "default", 8, "1", "1Gi"))},
			admitted: []string{"ns/a"},
		},
		{
			name:    "minResources larger than the cluster with overcommit",
			queues:  []Queue{openQueue("default", 1)},
			jobs:    []Job{asPending(gang("huge", "default", 40, "1", "1Gi"))},
			refused: map[string]string{"ns/huge": "resource in cluster is overused: cpu idle 38400m"},
		},
		{
			name:     "capability",
			queues:   []Queue{capped},
			jobs:     []Job{asPending(gang("a", "capped", 4, "1", "1Gi")), withCreation(asPending(gang("b", "capped", 4, "1", "1Gi")), time.Minute)},
			admitted: []string{"ns/a"},
			refused:  map[string]string{"ns/b": "queue resource quota insufficient: queue capped capability cpu 6"},
		},
		{
			name:     "a job without minResources is admitted",
			queues:   []Queue{openQueue("default", 1)},
			jobs:     []Job{withoutMinResources(asPending(gang("free", "default", 100, "1", "1Gi")))},
			admitted: []string{"ns/free"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := Snapshot{Nodes: nodes(4, "8", "32Gi"), Queues: tc.queues, Jobs: tc.jobs}
			r := Allocate(snap, DefaultOptions())
			for _, key := range tc.admitted {
				if s := r.PodGroups[key]; s.Phase != vcv1beta1.PodGroupInqueue {
					t.Errorf("%s: %+v, want Inqueue", key, s)
				}
			}
			for key, part := range tc.refused {
				s := r.PodGroups[key]
				if s.Phase != vcv1beta1.PodGroupPending || s.Unschedulable == nil || !strings.Contains(s.Unschedulable.Message, part) {
					t.Errorf("%s: %+v, want Pending with %q", key, s, part)
				}
			}
			if r.Stats.Admitted != len(tc.admitted) {
				t.Errorf("stats admitted %d, want %d", r.Stats.Admitted, len(tc.admitted))
			}
		})
	}
}

func withCreation(j Job, after time.Duration) Job {
	j.CreationTime = epoch.Add(after)
	return j
}

func withoutMinResources(j Job) Job {
	j.MinResources = nil
	return j
}
