package schedtest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// Inter-pod affinity on a stack of its own (4 nodes of 4 cpu), the gang
// scheduler placing gangs whose pods ask to be together or apart, from
// each other (pods of one PodGroup placed in one cycle, not yet bound) and
// from pods already running.
func TestPodAffinity(t *testing.T) {
	start := time.Now()
	s := stack.Start(t, stack.Options{Replicas: 1, Nodes: nodes, NodeCPU: fmt.Sprint(nodeCPU), NodeMemory: "16Gi"})
	t.Logf("stack up in %v", time.Since(start).Round(time.Millisecond))
	runScheduler(t, s)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s *stack.Stack)
	}{
		{"a gang with required affinity to itself lands on one node", gangTogether},
		{"required anti-affinity spreads a gang one per node, or leaves it waiting", gangApart},
		{"preferred affinity is honoured when it can be", preferredAffinity},
		{"a namespaceSelector picks namespaces by their labels", namespaceSelector},
	} {
		if !t.Run(tc.name, func(t *testing.T) { tc.run(t, s) }) {
			break
		}
	}
}

// affineJob is job(name, "default", n, "500m", forever) whose pods are
// labelled app=<name> and carry affinity.
func affineJob(name string, n int32, affinity *corev1.Affinity) *batch.Job {
	j := job(name, "default", n, "500m", forever)
	tmpl := &j.Spec.Tasks[0].Template
	tmpl.Labels = map[string]string{"app": name}
	tmpl.Spec.Affinity = affinity
	return j
}

// toApp is a term selecting the pods labelled app=<app>, by hostname.
func toApp(app string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		TopologyKey:   corev1.LabelHostname,
	}
}

// nodesOfJob lists the nodes of a Job's bound pods.
func nodesOfJob(s *stack.Stack, name string) []string {
	var out []string
	for _, p := range s.Pods(ns, name) {
		if p.Spec.NodeName != "" {
			out = append(out, p.Spec.NodeName)
		}
	}
	slices.Sort(out)
	return out
}

func waitBound(t *testing.T, s *stack.Stack, name string, n int) []string {
	t.Helper()
	var on []string
	stack.WaitFor(t, fmt.Sprintf("the %d pods of %s are bound", n, name), 30*time.Second, func() (bool, string) {
		on = nodesOfJob(s, name)
		return len(on) == n, fmt.Sprintf("bound on %v", on)
	})
	return on
}

func gangTogether(t *testing.T, s *stack.Stack) {
	j := vcjob.Create(t, s.Volcano, affineJob("together", 3, &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{toApp("together")},
	}}))
	on := waitBound(t, s, j.Name, 3)
	if len(slices.Compact(slices.Clone(on))) != 1 {
		t.Errorf("the gang is bound on %v, want one node", on)
	}
	stack.WaitFor(t, "the PodGroup is Running", 20*time.Second, func() (bool, string) {
		phase := phaseOf(podGroup(t, s, j))
		return phase == vcv1beta1.PodGroupRunning, string(phase)
	})
	t.Logf("together on %v", on)
	deleteJobs(t, s, j.Name)
}

func gangApart(t *testing.T, s *stack.Stack) {
	apart := func(name string, n int32) *batch.Job {
		return vcjob.Create(t, s.Volcano, affineJob(name, n, &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{toApp(name)},
		}}))
	}
	four := apart("apart-4", 4)
	on := waitBound(t, s, four.Name, 4)
	if len(slices.Compact(slices.Clone(on))) != 4 {
		t.Errorf("the gang of 4 is bound on %v, want one pod per node", on)
	}
	t.Logf("4 apart on %v", on)
	deleteJobs(t, s, four.Name)

	five := apart("apart-5", 5)
	const why = "4 node(s) didn't match pod anti-affinity rules"
	var pg *vcv1beta1.PodGroup
	stack.WaitFor(t, "the gang of 5 waits, admitted, with its reason", 30*time.Second, func() (bool, string) {
		pg = podGroup(t, s, five)
		c := unschedulable(pg)
		pods, _ := bound(s, five.Name)
		return pods == 5 && phaseOf(pg) == vcv1beta1.PodGroupInqueue && c != nil && strings.Contains(c.Message, why),
			fmt.Sprintf("%d pods, phase %s, condition %+v", pods, phaseOf(pg), c)
	})
	t.Logf("5 apart: %s", unschedulable(pg).Message)
	stack.WaitFor(t, "an Unschedulable event on the PodGroup says why", 20*time.Second, func() (bool, string) {
		events := s.Events(ns, pg.Name, "Unschedulable")
		return slices.ContainsFunc(events, func(m string) bool { return strings.Contains(m, why) }), fmt.Sprint(events)
	})
	holdFor(t, 2*time.Second, func() string {
		if on := nodesOfJob(s, five.Name); len(on) > 0 {
			return fmt.Sprintf("pods of the gang of 5 bound on %v", on)
		}
		for _, p := range s.Pods(ns, five.Name) {
			if p.Status.Phase != corev1.PodPending {
				return fmt.Sprintf("pod %s is %s, want Pending", p.Name, p.Status.Phase)
			}
		}
		return ""
	})
	deleteJobs(t, s, five.Name)
}

// preferredAffinity: a gang that prefers the node of a running pod goes
// there, though best fit would pick a fuller node; a gang that prefers its
// pods apart spreads over every node and places the rest beside them.
func preferredAffinity(t *testing.T, s *stack.Stack) {
	names := s.Cluster.NodeNames()
	slices.Sort(names)
	pinned := func(name, node, cpu string) *batch.Job {
		j := job(name, "default", 1, cpu, forever)
		tmpl := &j.Spec.Tasks[0].Template
		tmpl.Labels = map[string]string{"app": name}
		tmpl.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
		return vcjob.Create(t, s.Volcano, j)
	}
	// The filler leaves its node the best fit for small pods; the anchor is
	// on another node.
	filler := pinned("filler", names[0], "2")
	anchor := pinned("anchor", names[len(names)-1], "500m")
	waitBound(t, s, filler.Name, 1)
	waitBound(t, s, anchor.Name, 1)

	near := vcjob.Create(t, s.Volcano, affineJob("near", 2, &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: toApp("anchor")}},
	}}))
	on := waitBound(t, s, near.Name, 2)
	if on[0] != names[len(names)-1] || on[1] != on[0] {
		t.Errorf("the gang preferring the anchor's node is bound on %v, want %s (best fit alone picks %s)", on, names[len(names)-1], names[0])
	}
	t.Logf("near the anchor on %v", on)

	spread := vcjob.Create(t, s.Volcano, affineJob("spread", 6, &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: toApp("spread")}},
	}}))
	on = waitBound(t, s, spread.Name, 6)
	perNode := map[string]int{}
	for _, n := range on {
		perNode[n]++
	}
	if len(perNode) != len(names) || slices.Max(slices.Collect(maps.Values(perNode))) != 2 {
		t.Errorf("the gang preferring its pods apart is bound on %v, want every node, none with more than 2", on)
	}
	t.Logf("spread on %v", on)
	deleteJobs(t, s, filler.Name, anchor.Name, near.Name, spread.Name)
}

// namespaceSelector: a pod's required affinity to pods of the namespaces
// labelled team=batch follows the anchor there, which only a scheduler that
// reads namespaces' labels can do (their name alone does not match).
func namespaceSelector(t *testing.T, s *stack.Stack) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	patch := []byte(`{"metadata":{"labels":{"team":"batch"}}}`)
	if _, err := s.Kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	names := s.Cluster.NodeNames()
	slices.Sort(names)
	anchor := job("team-anchor", "default", 1, "500m", forever)
	anchor.Spec.Tasks[0].Template.Labels = map[string]string{"app": "team-anchor"}
	anchor.Spec.Tasks[0].Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: names[1]}
	anchor = vcjob.Create(t, s.Volcano, anchor)
	waitBound(t, s, anchor.Name, 1)

	term := toApp("team-anchor")
	term.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "batch"}}
	follower := vcjob.Create(t, s.Volcano, affineJob("team-follower", 2, &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term},
	}}))
	on := waitBound(t, s, follower.Name, 2)
	if on[0] != names[1] || on[1] != names[1] {
		t.Errorf("the pods with affinity to the anchor's namespace by label are bound on %v, want %s", on, names[1])
	}
	deleteJobs(t, s, anchor.Name, follower.Name)
}
