package scheduler

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/controllers/scheduler/core"
)

func cpuOf(l corev1.ResourceList) string {
	q := l[corev1.ResourceCPU]
	return q.String()
}

func podsOf(l corev1.ResourceList) int64 {
	q := l[corev1.ResourcePods]
	return q.Value()
}

func TestBuildViewCountsNodesAndGroups(t *testing.T) {
	notReady := kubeNode("n-down", "8")
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	cordoned := kubeNode("n-cordoned", "8")
	cordoned.Spec.Unschedulable = true
	pg := podGroupObj("ns", "a", "", 3, "1", vcv1beta1.PodGroupInqueue)
	pg.Spec.PriorityClassName = "high"
	other := kubePod("ns", "x", "w", 0, "2") // another scheduler's pod: uses the node only
	other.Annotations = nil
	other.Spec.SchedulerName = "default-scheduler"
	deleting := onNode(kubePod("ns", "a", "w", 3, "1"), "n1", corev1.PodRunning)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	gated := kubePod("ns", "a", "w", 5, "1")
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "wait"}}
	foreign := kubePod("ns", "a", "w", 6, "1")
	foreign.Spec.SchedulerName = "default-scheduler"
	in := inputs{
		nodes: []*corev1.Node{kubeNode("n1", "8"), notReady, cordoned},
		bound: []*corev1.Pod{
			onNode(kubePod("ns", "a", "w", 0, "1"), "n1", corev1.PodRunning),
			onNode(kubePod("ns", "a", "w", 1, "1"), "n1", corev1.PodSucceeded),
			onNode(kubePod("ns", "a", "w", 2, "1"), "n1", corev1.PodFailed),
			deleting,
			onNode(other, "n1", corev1.PodRunning),
		},
		unbound: []*corev1.Pod{
			kubePod("ns", "a", "w", 4, "1"), gated, foreign,
			kubePod("ns", "nogroup", "w", 0, "1"),
		},
		podGroups: []*vcv1beta1.PodGroup{pg},
		queues:    []*vcv1beta1.Queue{queueObj("default", 1)},
		classes: []*schedulingv1.PriorityClass{
			{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 100},
			{ObjectMeta: metav1.ObjectMeta{Name: "normal"}, Value: 5, GlobalDefault: true},
		},
		served: []string{"volcano"},
	}
	pods := newPodCache()
	v := buildView(in, assumedPods{}, &pods, time.Now())

	if len(v.snap.Nodes) != 2 {
		t.Fatalf("nodes %v, want n1 and the cordoned one (NotReady left out)", v.snap.Nodes)
	}
	var n1 core.Node
	for _, n := range v.snap.Nodes {
		if n.Name == "n1" {
			n1 = n
		}
		if n.Name == "n-cordoned" && !n.Unschedulable {
			t.Error("cordoned node not marked unschedulable")
		}
	}
	// Running (1) + deleting (1) + the other scheduler's (2); finished pods hold nothing.
	if cpuOf(n1.Used) != "4" || podsOf(n1.Used) != 3 {
		t.Errorf("n1 used cpu %s pods %d, want 4 and 3", cpuOf(n1.Used), podsOf(n1.Used))
	}
	job := v.snap.Jobs[0]
	if job.Queue != "default" || job.Priority != 100 || job.MinMember != 3 {
		t.Errorf("job queue %q priority %d minMember %d", job.Queue, job.Priority, job.MinMember)
	}
	// Running and succeeded count as placed; failed and deleting do not.
	if job.Bound["w"] != 2 || cpuOf(job.Allocated) != "1" {
		t.Errorf("job bound %v allocated %s, want w:2 and 1 cpu", job.Bound, cpuOf(job.Allocated))
	}
	if len(job.Pending) != 1 || job.Pending[0].Key != "ns/a-w-4" {
		t.Errorf("pending %v, want only ns/a-w-4 (gated, foreign and groupless left out)", job.Pending)
	}
	g := v.groups["ns/a"]
	if g.running != 1 || g.succeeded != 1 || g.failed != 1 || g.scheduled != 3 || g.completed != 2 || g.pending != 1 {
		t.Errorf("counts %+v", *g)
	}
	if v.pending["ns/a-w-4"] == nil {
		t.Error("pending pod not indexed for binding")
	}
}

func TestBuildViewAssumedPods(t *testing.T) {
	now := time.Now()
	pg := podGroupObj("ns", "a", "default", 2, "1", vcv1beta1.PodGroupInqueue)
	p0, p1, p2 := kubePod("ns", "a", "w", 0, "1"), kubePod("ns", "a", "w", 1, "1"), kubePod("ns", "a", "w", 2, "1")
	gone := kubePod("ns", "a", "w", 3, "1")
	recreated := kubePod("ns", "a", "w", 4, "1")
	assume := func(p *corev1.Pod, at time.Time) *assumedPod {
		return &assumedPod{uid: p.UID, node: "n1", group: "ns/a", task: "w", requests: core.PodRequests(p), at: at}
	}
	assumed := assumedPods{
		"ns/a-w-0": assume(p0, now),                   // the unbound informer still shows it
		"ns/a-w-1": assume(p1, now),                   // the bound informer shows it now
		"ns/a-w-2": assume(p2, now),                   // in neither informer, just bound
		"ns/a-w-3": assume(gone, now.Add(-time.Hour)), // in neither, long ago: deleted
		"ns/a-w-4": assume(recreated, now),
	}
	fresh := recreated.DeepCopy()
	fresh.UID = "uid-new"
	in := inputs{
		nodes:     []*corev1.Node{kubeNode("n1", "8")},
		bound:     []*corev1.Pod{onNode(p1, "n1", corev1.PodPending)},
		unbound:   []*corev1.Pod{p0, fresh},
		podGroups: []*vcv1beta1.PodGroup{pg},
		queues:    []*vcv1beta1.Queue{queueObj("default", 1)},
		served:    []string{"volcano"},
	}
	pods := newPodCache()
	v := buildView(in, assumed, &pods, now)
	if _, ok := assumed["ns/a-w-0"]; !ok {
		t.Error("forgot a pod the informer does not show bound yet")
	}
	if _, ok := assumed["ns/a-w-2"]; !ok {
		t.Error("forgot a pod moving between the informers")
	}
	for _, key := range []string{"ns/a-w-1", "ns/a-w-3", "ns/a-w-4"} {
		if _, ok := assumed[key]; ok {
			t.Errorf("still assumes %s", key)
		}
	}
	job := v.snap.Jobs[0]
	if job.Bound["w"] != 3 {
		t.Errorf("bound %v, want w:3 (one seen bound, two assumed)", job.Bound)
	}
	if len(job.Pending) != 1 || job.Pending[0].Key != "ns/a-w-4" {
		t.Errorf("pending %v, want only the recreated pod", job.Pending)
	}
	if n := v.snap.Nodes[0]; cpuOf(n.Used) != "3" || podsOf(n.Used) != 3 {
		t.Errorf("node used cpu %s pods %d, want 3 and 3", cpuOf(n.Used), podsOf(n.Used))
	}
}

func TestPodCacheReusesUntilTheObjectChanges(t *testing.T) {
	c := newPodCache()
	p := kubePod("ns", "a", "w", 0, "1")
	c.startCycle()
	first := c.get(p)
	if c.get(p) != first {
		t.Error("same object derived twice")
	}
	c.sweep()
	c.startCycle()
	q := p.DeepCopy()
	q.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	if e := c.get(q); e == first || cpuOf(e.task.Requests) != "2" {
		t.Error("an updated object kept its old derivation")
	}
	c.sweep()
	c.startCycle()
	c.sweep()
	if len(c.entries) != 0 {
		t.Errorf("%d entries kept for pods no cycle saw", len(c.entries))
	}
}

func TestNextStatus(t *testing.T) {
	now := metav1.Now().Rfc3339Copy()
	earlier := metav1.NewTime(now.Add(-time.Minute))
	unsched := &core.Condition{Reason: vcv1beta1.NotEnoughResourcesReason, Message: "2/8 tasks in gang unschedulable"}
	for _, tc := range []struct {
		name       string
		old        vcv1beta1.PodGroupStatus
		view       groupView
		gs         core.GroupStatus
		wantPhase  vcv1beta1.PodGroupPhase
		wantConds  map[vcv1beta1.PodGroupConditionType]string // type → reason
		keepsTimes bool
	}{
		{
			name: "waits", gs: core.GroupStatus{Phase: vcv1beta1.PodGroupPending, Unschedulable: unsched},
			wantPhase: vcv1beta1.PodGroupPending,
			wantConds: map[vcv1beta1.PodGroupConditionType]string{vcv1beta1.PodGroupUnschedulableType: vcv1beta1.NotEnoughResourcesReason},
		},
		{
			name: "still waits for the same reason",
			old: vcv1beta1.PodGroupStatus{Phase: vcv1beta1.PodGroupPending, Conditions: []vcv1beta1.PodGroupCondition{{
				Type: vcv1beta1.PodGroupUnschedulableType, Status: corev1.ConditionTrue, Reason: unsched.Reason,
				Message: unsched.Message, LastTransitionTime: earlier, TransitionID: "before",
			}}},
			gs:        core.GroupStatus{Phase: vcv1beta1.PodGroupPending, Unschedulable: unsched},
			wantPhase: vcv1beta1.PodGroupPending, keepsTimes: true,
			wantConds: map[vcv1beta1.PodGroupConditionType]string{vcv1beta1.PodGroupUnschedulableType: vcv1beta1.NotEnoughResourcesReason},
		},
		{
			name: "admitted: the reason goes",
			old: vcv1beta1.PodGroupStatus{Phase: vcv1beta1.PodGroupPending, Conditions: []vcv1beta1.PodGroupCondition{{
				Type: vcv1beta1.PodGroupUnschedulableType, Status: corev1.ConditionTrue, Reason: unsched.Reason,
			}}},
			gs:        core.GroupStatus{Phase: vcv1beta1.PodGroupInqueue},
			wantPhase: vcv1beta1.PodGroupInqueue, wantConds: map[vcv1beta1.PodGroupConditionType]string{},
		},
		{
			name:      "placed: Scheduled",
			old:       vcv1beta1.PodGroupStatus{Phase: vcv1beta1.PodGroupInqueue},
			view:      groupView{scheduled: 0, pending: 0},
			gs:        core.GroupStatus{Phase: vcv1beta1.PodGroupRunning, Bound: 8},
			wantPhase: vcv1beta1.PodGroupRunning,
			wantConds: map[vcv1beta1.PodGroupConditionType]string{vcv1beta1.PodGroupScheduled: scheduledReason},
		},
		{
			name:      "every placed pod finished: Completed",
			old:       vcv1beta1.PodGroupStatus{Phase: vcv1beta1.PodGroupRunning},
			view:      groupView{scheduled: 4, completed: 4, succeeded: 3, failed: 1},
			gs:        core.GroupStatus{Phase: vcv1beta1.PodGroupRunning},
			wantPhase: vcv1beta1.PodGroupCompleted,
			wantConds: map[vcv1beta1.PodGroupConditionType]string{vcv1beta1.PodGroupScheduled: scheduledReason},
		},
		{
			name:      "lost pods and cannot replace them while others run: Unknown",
			old:       vcv1beta1.PodGroupStatus{Phase: vcv1beta1.PodGroupRunning},
			view:      groupView{scheduled: 6, running: 6, pending: 2},
			gs:        core.GroupStatus{Phase: vcv1beta1.PodGroupPending, Unschedulable: unsched},
			wantPhase: vcv1beta1.PodGroupUnknown,
			wantConds: map[vcv1beta1.PodGroupConditionType]string{vcv1beta1.PodGroupUnschedulableType: vcv1beta1.NotEnoughResourcesReason},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := &vcv1beta1.PodGroup{Status: tc.old}
			g := tc.view
			g.pg = pg
			st := nextStatus(&g, tc.gs, "now", now)
			if st.Phase != tc.wantPhase {
				t.Errorf("phase %s, want %s", st.Phase, tc.wantPhase)
			}
			if st.Running != g.running || st.Succeeded != g.succeeded || st.Failed != g.failed {
				t.Errorf("counts %d/%d/%d, want %d/%d/%d", st.Running, st.Succeeded, st.Failed, g.running, g.succeeded, g.failed)
			}
			got := map[vcv1beta1.PodGroupConditionType]string{}
			for _, c := range st.Conditions {
				got[c.Type] = c.Reason
				if c.Status != corev1.ConditionTrue {
					t.Errorf("condition %s status %s", c.Type, c.Status)
				}
				if tc.keepsTimes && (c.TransitionID != "before" || !c.LastTransitionTime.Equal(&earlier)) {
					t.Errorf("an unchanged condition was restamped: %+v", c)
				}
				if !tc.keepsTimes && (c.TransitionID != "now" || !c.LastTransitionTime.Equal(&now)) {
					t.Errorf("a new condition was not stamped: %+v", c)
				}
			}
			if len(got) != len(tc.wantConds) {
				t.Errorf("conditions %v, want %v", got, tc.wantConds)
			}
			for typ, reason := range tc.wantConds {
				if got[typ] != reason {
					t.Errorf("condition %s reason %q, want %q", typ, got[typ], reason)
				}
			}
			if len(pg.Status.Conditions) != len(tc.old.Conditions) {
				t.Error("nextStatus changed the PodGroup it read")
			}
		})
	}
}

// Inter-pod affinity sees the pods on the nodes that have not finished,
// assumed ones included: all of them when a pod to place has a pod
// (anti-)affinity term, else only those that have one.
func TestBuildViewPodsForAffinity(t *testing.T) {
	now := time.Now()
	holds := func(p *corev1.Pod) *corev1.Pod {
		p.Labels = map[string]string{"app": "db"}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{podTermOf(corev1.LabelHostname, "app=web")},
		}}
		return p
	}
	plain := onNode(kubePod("ns", "b", "w", 0, "1"), "n1", corev1.PodRunning)
	holder := holds(onNode(kubePod("ns", "b", "w", 1, "1"), "n1", corev1.PodRunning))
	finished := holds(onNode(kubePod("ns", "b", "w", 2, "1"), "n1", corev1.PodSucceeded))
	justBound := kubePod("ns", "b", "w", 3, "1")
	assumed := func() assumedPods {
		return assumedPods{"ns/b-w-3": {pod: justBound, uid: justBound.UID, node: "n1", group: "ns/b", task: "w", requests: core.PodRequests(justBound), at: now}}
	}
	affine := kubePod("ns", "a", "w", 0, "1")
	affine.Labels = map[string]string{"app": "web"}
	affine.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{podTermOf(corev1.LabelHostname, "app=db")},
	}}
	for _, tc := range []struct {
		name    string
		pending *corev1.Pod
		want    []string // the pods' nodes and labels
	}{
		{"no pod to place has a term", kubePod("ns", "a", "w", 0, "1"), []string{"n1 map[app:db]"}},
		{"a pod to place has one", affine, []string{"n1 map[]", "n1 map[]", "n1 map[app:db]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := inputs{
				nodes:   []*corev1.Node{kubeNode("n1", "8")},
				bound:   []*corev1.Pod{plain, holder, finished},
				unbound: []*corev1.Pod{tc.pending},
				podGroups: []*vcv1beta1.PodGroup{
					podGroupObj("ns", "a", "default", 1, "1", vcv1beta1.PodGroupInqueue),
					podGroupObj("ns", "b", "default", 1, "1", vcv1beta1.PodGroupRunning),
				},
				queues: []*vcv1beta1.Queue{queueObj("default", 1)},
				served: []string{"volcano"},
			}
			pods := newPodCache()
			v := buildView(in, assumed(), &pods, now)
			var got []string
			for _, p := range v.snap.Pods {
				got = append(got, fmt.Sprintf("%s %v", p.Node, p.Labels))
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("pods %v, want %v", got, tc.want)
			}
			task := v.snap.Jobs[0].Pending[0]
			if task.Labels["app"] != tc.pending.Labels["app"] || (task.PodAffinity != nil) != (tc.pending.Spec.Affinity != nil) {
				t.Errorf("task %+v does not carry the pod's labels and pod affinity", task)
			}
		})
	}
}

// A PodGroup's minMember is a number anyone can write, not pods that exist: a gang of
// 2147483647 with one pending pod costs what a gang of one does, in the view and in a cycle.
func TestHugeMinMemberIsCheap(t *testing.T) {
	in := func(minMember int32) inputs {
		return inputs{
			nodes:     []*corev1.Node{kubeNode("n1", "8")},
			unbound:   []*corev1.Pod{kubePod("ns", "a", "w", 0, "1")},
			podGroups: []*vcv1beta1.PodGroup{podGroupObj("ns", "a", "", minMember, "1", vcv1beta1.PodGroupInqueue)},
			queues:    []*vcv1beta1.Queue{queueObj("default", 1)},
			served:    []string{"volcano"},
		}
	}
	cost := func(minMember int32) float64 {
		return testing.AllocsPerRun(5, func() {
			pods := newPodCache()
			v := buildView(in(minMember), assumedPods{}, &pods, time.Now())
			r := core.Allocate(v.snap, core.Options{})
			if len(r.Bindings) != 0 {
				t.Fatalf("a gang of %d bound %d pods with one pending", minMember, len(r.Bindings))
			}
		})
	}
	small, huge := cost(2), cost(2147483647)
	t.Logf("allocations: %v for minMember 2, %v for 2147483647", small, huge)
	if huge > small*2 {
		t.Errorf("minMember 2147483647 cost %v allocations, minMember 2 cost %v", huge, small)
	}
}
