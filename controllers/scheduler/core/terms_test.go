package core

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// podTermOf is a pod (anti-)affinity term selecting the pods labelled sel
// (key=value pairs), by topology key.
func podTermOf(topology string, sel ...string) corev1.PodAffinityTerm {
	m := map[string]string{}
	for _, kv := range sel {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: m}, TopologyKey: topology}
}

func TestPodTermMatches(t *testing.T) {
	type pod struct {
		ns     string
		labels labels.Set
	}
	withNS := func(term corev1.PodAffinityTerm, nss ...string) corev1.PodAffinityTerm {
		term.Namespaces = nss
		return term
	}
	withNSSelector := func(term corev1.PodAffinityTerm, sel *metav1.LabelSelector) corev1.PodAffinityTerm {
		term.NamespaceSelector = sel
		return term
	}
	withKeys := func(term corev1.PodAffinityTerm, match, mismatch []string) corev1.PodAffinityTerm {
		term.MatchLabelKeys, term.MismatchLabelKeys = match, mismatch
		return term
	}
	known := map[string]map[string]string{
		"data": {corev1.LabelMetadataName: "data", "team": "a"},
		"web":  {corev1.LabelMetadataName: "web", "team": "b"},
	}
	owner := labels.Set{"app": "x", "job": "j1"}
	tests := []struct {
		name  string
		term  corev1.PodAffinityTerm
		pod   pod
		match bool
	}{
		{"its own namespace by default", podTermOf("h", "app=x"), pod{"ns", labels.Set{"app": "x"}}, true},
		{"not another namespace by default", podTermOf("h", "app=x"), pod{"data", labels.Set{"app": "x"}}, false},
		{"labels differ", podTermOf("h", "app=x"), pod{"ns", labels.Set{"app": "y"}}, false},
		{"extra labels do not matter", podTermOf("h", "app=x"), pod{"ns", labels.Set{"app": "x", "tier": "1"}}, true},
		{"named namespaces", withNS(podTermOf("h", "app=x"), "data", "web"), pod{"web", labels.Set{"app": "x"}}, true},
		{"named namespaces leave out its own", withNS(podTermOf("h", "app=x"), "data"), pod{"ns", labels.Set{"app": "x"}}, false},
		{"an empty namespaceSelector selects every namespace", withNSSelector(podTermOf("h", "app=x"), &metav1.LabelSelector{}), pod{"anywhere", labels.Set{"app": "x"}}, true},
		{"a namespaceSelector by label", withNSSelector(podTermOf("h", "app=x"), &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}), pod{"data", labels.Set{"app": "x"}}, true},
		{"a namespaceSelector by label misses", withNSSelector(podTermOf("h", "app=x"), &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}), pod{"web", labels.Set{"app": "x"}}, false},
		{"a namespaceSelector leaves out its own namespace", withNSSelector(podTermOf("h", "app=x"), &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}), pod{"ns", labels.Set{"app": "x"}}, false},
		{"an unknown namespace has its name label", withNSSelector(podTermOf("h", "app=x"), &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "other"}}), pod{"other", labels.Set{"app": "x"}}, true},
		{"namespaces and namespaceSelector add up", withNSSelector(withNS(podTermOf("h", "app=x"), "web"), &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}), pod{"web", labels.Set{"app": "x"}}, true},
		{"no labelSelector selects nothing", corev1.PodAffinityTerm{TopologyKey: "h"}, pod{"ns", labels.Set{"app": "x"}}, false},
		{"an empty labelSelector selects every pod of the namespace", corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{}, TopologyKey: "h"}, pod{"ns", labels.Set{}}, true},
		{"an invalid labelSelector selects nothing", corev1.PodAffinityTerm{TopologyKey: "h", LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}},
		}}, pod{"ns", labels.Set{"app": "x"}}, false},
		{"expressions", corev1.PodAffinityTerm{TopologyKey: "h", LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"x", "y"}}, {Key: "tier", Operator: metav1.LabelSelectorOpDoesNotExist}},
		}}, pod{"ns", labels.Set{"app": "y"}}, true},
		{"matchLabelKeys takes the owner's value", withKeys(podTermOf("h", "app=x"), []string{"job"}, nil), pod{"ns", labels.Set{"app": "x", "job": "j1"}}, true},
		{"matchLabelKeys leaves out other values", withKeys(podTermOf("h", "app=x"), []string{"job"}, nil), pod{"ns", labels.Set{"app": "x", "job": "j2"}}, false},
		{"matchLabelKeys ignores a key the owner lacks", withKeys(podTermOf("h", "app=x"), []string{"rack"}, nil), pod{"ns", labels.Set{"app": "x"}}, true},
		{"mismatchLabelKeys leaves out the owner's value", withKeys(podTermOf("h", "app=x"), nil, []string{"job"}), pod{"ns", labels.Set{"app": "x", "job": "j1"}}, false},
		{"mismatchLabelKeys takes other values", withKeys(podTermOf("h", "app=x"), nil, []string{"job"}), pod{"ns", labels.Set{"app": "x", "job": "j2"}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			term := newPodTerm("ns", owner, &tc.term)
			if got := term.matches(tc.pod.ns, namespaceLabels(known, tc.pod.ns), tc.pod.labels); got != tc.match {
				t.Errorf("matches = %v, want %v", got, tc.match)
			}
			// The index never hides an entry that matches.
			var x termIndex
			x.add(7, term.selector)
			found := slices.Contains(x.candidates(tc.pod.labels, nil), 7)
			if tc.match && !found {
				t.Error("the index does not offer a term that matches")
			}
		})
	}
}

// Equal terms have equal keys; terms that read differently do not.
func TestTermKey(t *testing.T) {
	key := func(ns string, podLabels map[string]string, term corev1.PodAffinityTerm) string {
		var b strings.Builder
		writeTermKey(&b, ns, podLabels, &term)
		return b.String()
	}
	base := podTermOf("h", "app=x", "tier=1")
	same := podTermOf("h", "tier=1", "app=x")
	if key("ns", nil, base) != key("ns", nil, same) {
		t.Error("the order of matchLabels changes the key")
	}
	withKeys := base
	withKeys.MatchLabelKeys = []string{"job"}
	differ := []struct {
		name string
		a, b string
	}{
		{"topology", key("ns", nil, base), key("ns", nil, podTermOf("zone", "app=x", "tier=1"))},
		{"own namespace", key("ns", nil, base), key("other", nil, base)},
		{"selector", key("ns", nil, base), key("ns", nil, podTermOf("h", "app=x"))},
		{"matchLabelKeys values", key("ns", map[string]string{"job": "1"}, withKeys), key("ns", map[string]string{"job": "2"}, withKeys)},
		{"no selector", key("ns", nil, base), key("ns", nil, corev1.PodAffinityTerm{TopologyKey: "h"})},
	}
	for _, d := range differ {
		if d.a == d.b {
			t.Errorf("%s: equal keys for different terms", d.name)
		}
	}
}

func TestTermIndexCandidates(t *testing.T) {
	sel := func(term corev1.PodAffinityTerm) labels.Selector { return newPodTerm("ns", nil, &term).selector }
	var x termIndex
	x.add(0, sel(podTermOf("h", "app=x")))
	x.add(1, sel(podTermOf("h", "app=y", "tier=1")))
	x.add(2, sel(corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}},
	}}))
	x.add(3, sel(corev1.PodAffinityTerm{})) // selects nothing: never offered
	x.add(4, sel(corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"x", "z"}}},
	}}))
	tests := []struct {
		labels map[string]string
		want   []int32
	}{
		{map[string]string{"app": "x"}, []int32{0, 2, 4}},
		{map[string]string{"app": "y"}, []int32{1, 2}},
		{map[string]string{"app": "z"}, []int32{2, 4}},
		{map[string]string{"other": "1"}, []int32{2}},
		{nil, []int32{2}},
	}
	for _, tc := range tests {
		got := x.candidates(tc.labels, nil)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("candidates(%v) = %v, want %v", tc.labels, got, tc.want)
		}
	}
}
