package core

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const hostname = corev1.LabelHostname

// labelled sets labels (key=value pairs) on every pod of j.
func labelled(j Job, kv ...string) Job {
	for k := range j.Pending {
		l := maps.Clone(j.Pending[k].Labels)
		if l == nil {
			l = map[string]string{}
		}
		for _, p := range kv {
			key, v, _ := strings.Cut(p, "=")
			l[key] = v
		}
		j.Pending[k].Labels = l
	}
	return j
}

// affine gives every pod of j required affinity terms; anti, required
// anti-affinity terms.
func affine(j Job, terms ...corev1.PodAffinityTerm) Job {
	for k := range j.Pending {
		j.Pending[k].PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}
	}
	return j
}

func anti(j Job, terms ...corev1.PodAffinityTerm) Job {
	for k := range j.Pending {
		j.Pending[k].PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}
	}
	return j
}

// prefers gives every pod of j a preferred affinity term of weight w;
// negative w makes it an anti-affinity term.
func prefers(j Job, w int32, term corev1.PodAffinityTerm) Job {
	pref := []corev1.WeightedPodAffinityTerm{{Weight: abs(w), PodAffinityTerm: term}}
	for k := range j.Pending {
		if w > 0 {
			j.Pending[k].PodAffinity = &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: pref}
		} else {
			j.Pending[k].PodAntiAffinity = &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: pref}
		}
	}
	return j
}

func abs(w int32) int32 { return max(w, -w) }

// placed is a pod on node with labels (key=value pairs).
func placed(ns, node string, kv ...string) PlacedPod {
	l := map[string]string{}
	for _, p := range kv {
		k, v, _ := strings.Cut(p, "=")
		l[k] = v
	}
	return PlacedPod{Namespace: ns, Node: node, Labels: l}
}

// usedNodes is n nodes of cpu each; node-00 has used cpu of it, so that
// best fit alone would pick it first.
func usedNodes(n int, cpu, used string) []Node {
	ns := nodes(n, cpu, "16Gi")
	ns[0].Used = addPod(nil, res(used, ""))
	return ns
}

func zoned(ns []Node, zones ...string) []Node {
	for i := range ns {
		ns[i].Labels["zone"] = zones[i%len(zones)]
	}
	return ns
}

func snapOf(ns []Node, pods []PlacedPod, jobs ...Job) Snapshot {
	return Snapshot{Nodes: ns, Queues: []Queue{openQueue("default", 1)}, Jobs: jobs, Pods: pods}
}

// nodesOf lists, per job key, the nodes its pods were bound to, sorted.
func nodesOf(r Result, job string) []string {
	var out []string
	for _, b := range r.Bindings {
		if b.PodGroup == job {
			out = append(out, b.Node)
		}
	}
	slices.Sort(out)
	return out
}

func distinct(ss []string) int { return len(slices.Compact(slices.Clone(ss))) }

func TestInterPodAffinity(t *testing.T) {
	self := podTermOf(hostname, "app=x")
	tests := []struct {
		name  string
		snap  Snapshot
		check func(r Result) string // "" when right
	}{
		{
			"a gang with required affinity to itself lands on one node",
			snapOf(nodes(4, "4", "16Gi"), nil, affine(labelled(gang("g", "default", 3, "1", "1Gi"), "app=x"), self)),
			func(r Result) string {
				if got := nodesOf(r, "ns/g"); len(got) != 3 || distinct(got) != 1 {
					return fmt.Sprintf("bound to %v, want 3 on one node", got)
				}
				return ""
			},
		},
		{
			"its first pod goes where the gang has room, not to the best fit",
			snapOf(usedNodes(3, "4", "3"), nil, affine(labelled(gang("g", "default", 3, "1", "1Gi"), "app=x"), self)),
			func(r Result) string {
				if got := nodesOf(r, "ns/g"); !slices.Equal(got, []string{"node-01", "node-01", "node-01"}) {
					return fmt.Sprintf("bound to %v, want all on node-01 (node-00 has room for one)", got)
				}
				return ""
			},
		},
		{
			"a gang with affinity to itself larger than any node waits",
			snapOf(nodes(2, "2", "16Gi"), nil, affine(labelled(gang("g", "default", 3, "1", "1Gi"), "app=x"), self)),
			wantsWait("ns/g", "1/3 tasks in gang unschedulable: pod group is not ready, 0 bound, 2 placeable, 3 minAvailable; "+
				"1 task: 0/2 nodes are unavailable: 1 Insufficient cpu, 1 node(s) didn't match pod affinity rules"),
		},
		{
			"required anti-affinity by hostname spreads a gang one per node",
			snapOf(usedNodes(4, "4", "1"), nil, anti(labelled(gang("g", "default", 4, "1", "1Gi"), "app=x"), self)),
			func(r Result) string {
				if got := nodesOf(r, "ns/g"); len(got) != 4 || distinct(got) != 4 {
					return fmt.Sprintf("bound to %v, want one on each of 4 nodes", got)
				}
				return ""
			},
		},
		{
			"a gang with anti-affinity to itself larger than the nodes waits whole",
			snapOf(nodes(4, "4", "16Gi"), nil, anti(labelled(gang("g", "default", 5, "1", "1Gi"), "app=x"), self)),
			wantsWait("ns/g", "1/5 tasks in gang unschedulable: pod group is not ready, 0 bound, 4 placeable, 5 minAvailable; "+
				"1 task: 0/4 nodes are unavailable: 4 node(s) didn't match pod anti-affinity rules"),
		},
		{
			"affinity to a running pod by zone",
			snapOf(zoned(nodes(4, "4", "16Gi"), "a", "b"), []PlacedPod{placed("ns", "node-03", "app=db")},
				affine(gang("g", "default", 2, "1", "1Gi"), podTermOf("zone", "app=db"))),
			func(r Result) string {
				if got := nodesOf(r, "ns/g"); len(got) != 2 || slices.ContainsFunc(got, func(n string) bool { return n != "node-01" && n != "node-03" }) {
					return fmt.Sprintf("bound to %v, want zone b (node-01, node-03)", got)
				}
				return ""
			},
		},
		{
			"affinity no pod matches, to pods it is not one of, waits",
			snapOf(nodes(2, "4", "16Gi"), nil, affine(labelled(gang("g", "default", 1, "1", "1Gi"), "app=x"), podTermOf(hostname, "app=db"))),
			wantsWait("ns/g", "1 task: 0/2 nodes are unavailable: 2 node(s) didn't match pod affinity rules"),
		},
		{
			"a node without the topology key does not pass affinity",
			func() Snapshot {
				ns := nodes(3, "4", "16Gi")
				ns[2].Labels["rack"] = "r1"
				return snapOf(ns, nil, affine(labelled(gang("g", "default", 2, "1", "1Gi"), "app=x"), podTermOf("rack", "app=x")))
			}(),
			func(r Result) string {
				if got := nodesOf(r, "ns/g"); !slices.Equal(got, []string{"node-02", "node-02"}) {
					return fmt.Sprintf("bound to %v, want node-02, the only one in a rack", got)
				}
				return ""
			},
		},
		{
			"a running gang's extra pod joins its pods",
			func() Snapshot {
				j := affine(labelled(gang("g", "default", 1, "1", "1Gi"), "app=x"), self)
				j.Phase, j.MinMember, j.Bound = "Running", 2, map[string]int32{"worker": 2}
				return snapOf(usedNodes(3, "4", "1"), []PlacedPod{placed("ns", "node-02", "app=x"), placed("ns", "node-02", "app=x")}, j)
			}(),
			wantsOn("ns/g", "node-02"),
		},
		{
			"required affinity with two terms needs one pod matching both",
			snapOf(nodes(3, "4", "16Gi"), []PlacedPod{placed("ns", "node-00", "app=db"), placed("ns", "node-01", "tier=cache"), placed("ns", "node-02", "app=db", "tier=cache")},
				affine(gang("g", "default", 1, "1", "1Gi"), podTermOf(hostname, "app=db"), podTermOf(hostname, "tier=cache"))),
			wantsOn("ns/g", "node-02"),
		},
		{
			"anti-affinity by a key a node lacks does not keep pods off it",
			func() Snapshot {
				ns := usedNodes(2, "4", "2")
				ns[0].Labels["rack"] = "r1"
				return snapOf(ns, []PlacedPod{placed("ns", "node-00", "app=db")},
					anti(gang("g", "default", 1, "1", "1Gi"), podTermOf("rack", "app=db")))
			}(),
			wantsOn("ns/g", "node-01"),
		},
		{
			"a running pod's anti-affinity keeps the pods it selects off its domain",
			snapOf(usedNodes(2, "4", "2"), []PlacedPod{holding(placed("ns", "node-00", "app=db"), podTermOf(hostname, "app=web"))},
				labelled(gang("web", "default", 1, "1", "1Gi"), "app=web"),
				labelled(gang("other", "default", 1, "1", "1Gi"), "app=other")),
			func(r Result) string {
				if got := nodesOf(r, "ns/web"); !slices.Equal(got, []string{"node-01"}) {
					return fmt.Sprintf("web bound to %v, want node-01", got)
				}
				if got := nodesOf(r, "ns/other"); !slices.Equal(got, []string{"node-00"}) {
					return fmt.Sprintf("other bound to %v, want node-00 (best fit, not selected)", got)
				}
				return ""
			},
		},
		{
			"with no other node, the symmetric check says so",
			snapOf(nodes(1, "4", "16Gi"), []PlacedPod{holding(placed("ns", "node-00", "app=db"), podTermOf(hostname, "app=web"))},
				labelled(gang("web", "default", 1, "1", "1Gi"), "app=web")),
			wantsWait("ns/web", "1 task: 0/1 nodes are unavailable: 1 node(s) didn't satisfy existing pods anti-affinity rules"),
		},
		{
			"a running pod's anti-affinity selects in its own namespace only by default",
			snapOf(usedNodes(2, "4", "2"), []PlacedPod{holding(placed("other", "node-00", "app=db"), podTermOf(hostname, "app=web"))},
				labelled(gang("web", "default", 1, "1", "1Gi"), "app=web")),
			func(r Result) string {
				if got := nodesOf(r, "ns/web"); !slices.Equal(got, []string{"node-00"}) {
					return fmt.Sprintf("web bound to %v, want node-00", got)
				}
				return ""
			},
		},
		{
			"namespaces name where the selected pods are",
			snapOf(nodes(3, "4", "16Gi"), []PlacedPod{placed("ns", "node-00", "app=db"), placed("data", "node-02", "app=db")},
				affine(gang("g", "default", 1, "1", "1Gi"), inNamespaces(podTermOf(hostname, "app=db"), "data"))),
			wantsOn("ns/g", "node-02"),
		},
		{
			"an empty namespaceSelector selects every namespace",
			snapOf(nodes(3, "4", "16Gi"), []PlacedPod{placed("data", "node-02", "app=db")},
				affine(gang("g", "default", 1, "1", "1Gi"), withNamespaceSelector(podTermOf(hostname, "app=db"), map[string]string{}))),
			wantsOn("ns/g", "node-02"),
		},
		{
			"a namespaceSelector selects namespaces by their labels",
			func() Snapshot {
				s := snapOf(nodes(3, "4", "16Gi"), []PlacedPod{placed("web", "node-01", "app=db"), placed("data", "node-02", "app=db")},
					affine(gang("g", "default", 1, "1", "1Gi"), withNamespaceSelector(podTermOf(hostname, "app=db"), map[string]string{"team": "a"})))
				s.Namespaces = map[string]map[string]string{"data": {"team": "a"}, "web": {"team": "b"}}
				return s
			}(),
			wantsOn("ns/g", "node-02"),
		},
		{
			"a task with affinity to another task of its gang waits for it in the same turn",
			func() Snapshot {
				j := gang("g", "default", 0, "1", "1Gi")
				addTasks(&j, "a-ps", 1, "1", "1Gi") // tried first: no worker is placed yet
				addTasks(&j, "worker", 3, "1", "1Gi")
				j.MinMember = 4
				for k := range j.Pending {
					j.Pending[k].Labels = map[string]string{"role": j.Pending[k].Name}
					if j.Pending[k].Name == "a-ps" {
						j.Pending[k].PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{podTermOf(hostname, "role=worker")}}
					}
				}
				return snapOf(nodes(2, "4", "16Gi"), nil, j)
			}(),
			func(r Result) string {
				got := boundNodes(r)
				if len(got) != 4 || got["ns/g-a-ps-0"] != got["ns/g-worker-0"] {
					return fmt.Sprintf("bound %v, want all 4, the ps beside a worker", got)
				}
				return ""
			},
		},
		{
			"a gang given up leaves no pod behind for affinity",
			func() Snapshot {
				first := anti(labelled(gang("a", "default", 5, "1", "1Gi"), "app=a"), podTermOf(hostname, "app=a"))
				second := affine(gang("b", "default", 1, "1", "1Gi"), podTermOf(hostname, "app=a"))
				second.CreationTime = first.CreationTime.Add(1)
				return snapOf(nodes(4, "4", "16Gi"), nil, first, second)
			}(),
			func(r Result) string {
				if len(r.Bindings) != 0 {
					return fmt.Sprintf("bound %v, want none: a's placements were undone", boundNodes(r))
				}
				if c := r.PodGroups["ns/b"].Unschedulable; c == nil || !strings.Contains(c.Message, reasonPodAffinity) {
					return fmt.Sprintf("b's condition %+v, want pod affinity", c)
				}
				return ""
			},
		},
		{
			"matchLabelKeys keeps two gangs of one app each on its own node",
			func() Snapshot {
				term := podTermOf(hostname, "app=x")
				term.MatchLabelKeys = []string{"job"}
				a := affine(labelled(gang("a", "default", 3, "1", "1Gi"), "app=x", "job=a"), term)
				b := affine(labelled(gang("b", "default", 3, "1", "1Gi"), "app=x", "job=b"), term)
				b.CreationTime = a.CreationTime.Add(1)
				return snapOf(nodes(2, "4", "16Gi"), nil, a, b)
			}(),
			func(r Result) string {
				a, b := nodesOf(r, "ns/a"), nodesOf(r, "ns/b")
				if len(a) != 3 || len(b) != 3 || distinct(a) != 1 || distinct(b) != 1 || a[0] == b[0] {
					return fmt.Sprintf("a on %v, b on %v: want each whole on its own node", a, b)
				}
				return ""
			},
		},
		{
			"preferred affinity draws a pod to the domain of the pods it selects",
			snapOf(usedNodes(3, "4", "2"), []PlacedPod{placed("ns", "node-02", "app=cache")},
				prefers(gang("g", "default", 2, "1", "1Gi"), 10, podTermOf(hostname, "app=cache"))),
			func(r Result) string {
				if got := nodesOf(r, "ns/g"); !slices.Equal(got, []string{"node-02", "node-02"}) {
					return fmt.Sprintf("bound to %v, want node-02 (best fit alone picks node-00)", got)
				}
				return ""
			},
		},
		{
			"preferred affinity to a full node is no requirement",
			snapOf(usedNodes(3, "4", "4"), []PlacedPod{placed("ns", "node-00", "app=cache")},
				prefers(gang("g", "default", 2, "1", "1Gi"), 10, podTermOf(hostname, "app=cache"))),
			func(r Result) string {
				if got := nodesOf(r, "ns/g"); len(got) != 2 || slices.Contains(got, "node-00") {
					return fmt.Sprintf("bound to %v, want 2 off the full node-00", got)
				}
				return ""
			},
		},
		{
			"preferred anti-affinity to itself spreads a gang",
			snapOf(nodes(4, "4", "16Gi"), nil, prefers(labelled(gang("g", "default", 4, "1", "1Gi"), "app=x"), -10, self)),
			func(r Result) string {
				if got := nodesOf(r, "ns/g"); len(got) != 4 || distinct(got) != 4 {
					return fmt.Sprintf("bound to %v, want one on each node (best fit alone packs them)", got)
				}
				return ""
			},
		},
		{
			"preferred anti-affinity beyond the nodes still places the gang, evenly",
			snapOf(nodes(4, "4", "16Gi"), nil, prefers(labelled(gang("g", "default", 8, "1", "1Gi"), "app=x"), -10, self)),
			func(r Result) string {
				got := nodesOf(r, "ns/g")
				counts := map[string]int{}
				for _, n := range got {
					counts[n]++
				}
				if len(got) != 8 || len(counts) != 4 || slices.Max(slices.Collect(maps.Values(counts))) != 2 {
					return fmt.Sprintf("bound to %v, want two on each node", got)
				}
				return ""
			},
		},
		{
			"a running pod's preferred anti-affinity keeps the pods it selects away when it can",
			snapOf(usedNodes(2, "4", "2"), []PlacedPod{{Namespace: "ns", Node: "node-00", Labels: map[string]string{"app": "db"},
				PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
					{Weight: 50, PodAffinityTerm: podTermOf(hostname, "app=web")},
				}}}},
				labelled(gang("web", "default", 1, "1", "1Gi"), "app=web")),
			wantsOn("ns/web", "node-01"),
		},
		{
			"a running pod's preferred affinity draws the pods it selects",
			snapOf(usedNodes(3, "4", "2"), []PlacedPod{{Namespace: "ns", Node: "node-02", Labels: map[string]string{"app": "db"},
				PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
					{Weight: 5, PodAffinityTerm: podTermOf(hostname, "app=web")},
				}}}},
				labelled(gang("web", "default", 1, "1", "1Gi"), "app=web")),
			wantsOn("ns/web", "node-02"),
		},
		{
			"weights add up: the stronger term wins",
			func() Snapshot {
				j := gang("g", "default", 1, "1", "1Gi")
				j.Pending[0].PodAffinity = &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
					{Weight: 10, PodAffinityTerm: podTermOf(hostname, "app=cache")},
					{Weight: 30, PodAffinityTerm: podTermOf(hostname, "app=db")},
				}}
				j.Pending[0].PodAntiAffinity = &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
					{Weight: 25, PodAffinityTerm: podTermOf(hostname, "app=noisy")},
				}}
				return snapOf(nodes(3, "4", "16Gi"), []PlacedPod{
					placed("ns", "node-00", "app=cache"),
					placed("ns", "node-01", "app=db"), placed("ns", "node-01", "app=noisy"), // 30 - 25 = 5
					placed("ns", "node-02", "app=cache"), placed("ns", "node-02", "app=cache"), // 20
				}, j)
			}(),
			wantsOn("ns/g", "node-02"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Allocate(tc.snap, DefaultOptions())
			if msg := tc.check(r); msg != "" {
				t.Error(msg)
			}
			// The shortcuts change nothing here either.
			c := newCycle(tc.snap, DefaultOptions())
			c.exhaustive = true
			c.enqueue()
			c.allocate()
			if slow := c.result(); !slices.Equal(r.Bindings, slow.Bindings) {
				t.Errorf("bindings %v with shortcuts, %v without", r.Bindings, slow.Bindings)
			}
		})
	}
}

func holding(p PlacedPod, antiTerms ...corev1.PodAffinityTerm) PlacedPod {
	p.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: antiTerms}
	return p
}

func inNamespaces(term corev1.PodAffinityTerm, nss ...string) corev1.PodAffinityTerm {
	term.Namespaces = nss
	return term
}

func withNamespaceSelector(term corev1.PodAffinityTerm, sel map[string]string) corev1.PodAffinityTerm {
	term.NamespaceSelector = &metav1.LabelSelector{MatchLabels: sel}
	return term
}

func wantsOn(job string, node string) func(Result) string {
	return func(r Result) string {
		if got := nodesOf(r, job); len(got) != 1 || got[0] != node {
			return fmt.Sprintf("%s bound to %v, want %s", job, got, node)
		}
		return ""
	}
}

// wantsWait: the job has nothing bound and an Unschedulable message that
// ends with (or is) message.
func wantsWait(job, message string) func(Result) string {
	return func(r Result) string {
		if got := nodesOf(r, job); len(got) > 0 {
			return fmt.Sprintf("%s bound to %v, want none", job, got)
		}
		c := r.PodGroups[job].Unschedulable
		if c == nil || !strings.HasSuffix(c.Message, message) {
			return fmt.Sprintf("%s condition %+v, want message ending %q", job, c, message)
		}
		return ""
	}
}

// A cycle without pod (anti-)affinity has no inter-pod state: pods without
// it pay nothing for it.
func TestNoPodAffinityNoState(t *testing.T) {
	snap := benchSnapshot(2)
	snap.Pods = []PlacedPod{placed("ns", "cpu-0000", "app=db")}
	if c := newCycle(snap, DefaultOptions()); c.pods != nil {
		t.Error("an inter-pod state for a snapshot without any pod affinity term")
	}
}

// withPodAffinity adds inter-pod affinity to a random snapshot: labels on
// every pod, terms of every kind on some jobs, running pods that hold
// terms against the pending ones.
func withPodAffinity(snap Snapshot, seed uint64) Snapshot {
	rng := rand.New(rand.NewPCG(seed, 77))
	tiers := []string{"tier=0", "tier=1", "tier=2"}
	tier := func() string { return tiers[rng.IntN(len(tiers))] }
	topology := func() string { return []string{hostname, "zone"}[rng.IntN(2)] }
	jobs := make([]Job, len(snap.Jobs))
	for i, j := range snap.Jobs {
		j.Pending = slices.Clone(j.Pending)
		group := tier()
		j = labelled(j, "app="+j.Name, group)
		own := podTermOf(topology(), "app="+j.Name)
		switch rng.IntN(10) {
		case 0:
			j = affine(j, own)
		case 1:
			j = anti(j, podTermOf(hostname, "app="+j.Name))
		case 2:
			j = anti(j, podTermOf("zone", tier()))
		case 3:
			j = prefers(j, int32(1+rng.IntN(100)), podTermOf(topology(), tier()))
		case 4:
			j = prefers(j, -int32(1+rng.IntN(100)), own)
		case 5:
			j = affine(j, podTermOf("zone", tier()))
		case 6: // with the other jobs of its tier
			j = affine(j, podTermOf(topology(), group))
		case 7:
			j = anti(j, podTermOf(hostname, group))
		}
		jobs[i] = j
	}
	snap.Jobs = jobs
	snap.Pods = nil
	for i := range len(snap.Nodes) / 2 {
		p := placed("ns", snap.Nodes[rng.IntN(len(snap.Nodes))].Name, tier(), fmt.Sprintf("app=running-%d", i))
		switch rng.IntN(4) {
		case 0:
			p = holding(p, podTermOf(hostname, tier()))
		case 1:
			p.PodAffinity = &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
				{Weight: int32(1 + rng.IntN(100)), PodAffinityTerm: podTermOf(topology(), tier())},
			}}
		}
		snap.Pods = append(snap.Pods, p)
	}
	return snap
}

func TestDeterminismWithPodAffinity(t *testing.T) {
	for seed := range uint64(5) {
		snap := withPodAffinity(randomSnapshot(seed, 60, 120), seed)
		first := Allocate(snap, DefaultOptions())
		if len(first.Bindings) == 0 || first.Stats.Unschedulable == 0 {
			t.Fatalf("seed %d: a dull snapshot (%+v); the test needs both outcomes", seed, first.Stats)
		}
		other := shuffled(snap, seed)
		other.Pods = slices.Clone(snap.Pods)
		rand.New(rand.NewPCG(seed, 2)).Shuffle(len(other.Pods), func(a, b int) { other.Pods[a], other.Pods[b] = other.Pods[b], other.Pods[a] })
		if again := Allocate(other, DefaultOptions()); !reflect.DeepEqual(first, again) {
			t.Errorf("seed %d: the order of the snapshot's slices changed the result", seed)
		}
	}
}

// The shortcuts stay exact with inter-pod affinity: a task whose own terms
// make the nodes that can take it change as its shape is placed is left out
// of them, and the terms of others that select a task are part of its shape.
func TestShortcutsChangeNoOutcomeWithPodAffinity(t *testing.T) {
	reasons := map[string]int{}
	for seed := range uint64(20) {
		fast := checkShortcuts(t, seed, withPodAffinity(randomSnapshot(seed, 40, 150), seed))
		for _, f := range fast.PodGroups {
			if f.Unschedulable == nil {
				continue
			}
			for _, r := range []string{reasonPodAffinity, reasonPodAntiAffinity, reasonExistingAntiAffinity} {
				if strings.Contains(f.Unschedulable.Message, r) {
					reasons[r]++
				}
			}
		}
	}
	if len(reasons) < 3 {
		t.Errorf("the snapshots gave reasons %v: they do not exercise every check", reasons)
	}
}
