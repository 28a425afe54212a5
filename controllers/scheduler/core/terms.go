package core

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Pod (anti-)affinity terms, read as kube-scheduler reads them: a term
// selects the pods of some namespaces (those it names, those its
// namespaceSelector picks, or by default the namespace of the pod that
// carries it) whose labels match its labelSelector, and says in which
// topology domain (the value of the node label topologyKey) they count.

const (
	reasonPodAffinity          = "node(s) didn't match pod affinity rules"
	reasonPodAntiAffinity      = "node(s) didn't match pod anti-affinity rules"
	reasonExistingAntiAffinity = "node(s) didn't satisfy existing pods anti-affinity rules"
)

// podTerm is one PodAffinityTerm of a pod, ready to match other pods.
type podTerm struct {
	// selector is the labelSelector with matchLabelKeys and
	// mismatchLabelKeys merged in; nil (no selector, or one that does not
	// parse) matches no pod.
	selector labels.Selector
	// namespaces are matched by name; nsSelector by labels (nil: none).
	namespaces  []string
	nsSelector  labels.Selector
	topologyKey string
}

// newPodTerm reads term as carried by a pod of namespace ns with labels
// podLabels: a term that names no namespace and has no namespaceSelector
// selects its own pod's namespace, and matchLabelKeys (mismatchLabelKeys)
// require the pod's own value of each key it has (any other value), as the
// API server merges them into the labelSelector.
func newPodTerm(ns string, podLabels map[string]string, term *corev1.PodAffinityTerm) podTerm {
	t := podTerm{topologyKey: term.TopologyKey, namespaces: term.Namespaces}
	if len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
		t.namespaces = []string{ns}
	}
	if term.NamespaceSelector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector); err == nil {
			t.nsSelector = sel
		}
	}
	if term.LabelSelector == nil {
		return t
	}
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return t
	}
	sel, ok := withLabelKeys(sel, podLabels, term.MatchLabelKeys, selection.In)
	if ok {
		sel, ok = withLabelKeys(sel, podLabels, term.MismatchLabelKeys, selection.NotIn)
	}
	if ok {
		t.selector = sel
	}
	return t
}

// withLabelKeys adds to sel, for each key the pod has a label for, the
// requirement key op (its value).
func withLabelKeys(sel labels.Selector, podLabels map[string]string, keys []string, op selection.Operator) (labels.Selector, bool) {
	for _, key := range keys {
		v, ok := podLabels[key]
		if !ok {
			continue
		}
		r, err := labels.NewRequirement(key, op, []string{v})
		if err != nil {
			return nil, false
		}
		sel = sel.Add(*r)
	}
	return sel, true
}

// matches reports whether a pod of namespace ns (whose namespace has
// labels nsLabels) with labels podLabels is one the term selects.
func (t *podTerm) matches(ns string, nsLabels, podLabels labels.Set) bool {
	if t.selector == nil {
		return false
	}
	if !slices.Contains(t.namespaces, ns) && (t.nsSelector == nil || !t.nsSelector.Matches(nsLabels)) {
		return false
	}
	return t.selector.Matches(podLabels)
}

// writeTermKey writes a canonical text of term as carried by a pod of
// namespace ns with labels podLabels: equal texts read as equal podTerms.
// Fields are separated by control bytes, which names cannot contain.
func writeTermKey(b *strings.Builder, ns string, podLabels map[string]string, term *corev1.PodAffinityTerm) {
	writeFields(b, 't', term.TopologyKey)
	if len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
		writeFields(b, 'o', ns)
	} else {
		writeFields(b, 'n', term.Namespaces...)
	}
	writeSelectorKey(b, 's', term.NamespaceSelector)
	writeSelectorKey(b, 'l', term.LabelSelector)
	if term.LabelSelector == nil {
		return
	}
	for _, key := range term.MatchLabelKeys {
		if v, ok := podLabels[key]; ok {
			writeFields(b, 'k', key, v)
		}
	}
	for _, key := range term.MismatchLabelKeys {
		if v, ok := podLabels[key]; ok {
			writeFields(b, 'm', key, v)
		}
	}
}

func writeSelectorKey(b *strings.Builder, lead byte, sel *metav1.LabelSelector) {
	if sel == nil {
		b.WriteByte(lead)
		b.WriteByte('-')
		return
	}
	b.WriteByte(lead)
	keys := make([]string, 0, len(sel.MatchLabels))
	for k := range sel.MatchLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		writeFields(b, 2, k, sel.MatchLabels[k])
	}
	for _, r := range sel.MatchExpressions {
		writeFields(b, 3, r.Key, string(r.Operator))
		writeFields(b, 4, r.Values...)
	}
}

// anchor is the label a pod must carry, with one of values, to match sel:
// the first requirement with Equals, DoubleEquals or In. ok is false when
// there is none; matches is false when sel matches no pod at all.
func anchor(sel labels.Selector) (key string, values []string, ok, matches bool) {
	if sel == nil {
		return "", nil, false, false
	}
	reqs, selectable := sel.Requirements()
	if !selectable {
		return "", nil, false, false // labels.Nothing
	}
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			return r.Key(), r.ValuesUnsorted(), true, true
		}
	}
	return "", nil, false, true
}

// termIndex finds the entries (term counters, held terms) whose selectors
// a pod's labels may match without trying them all: an entry is filed
// under its anchor's label pairs, or among those tried for every pod when
// it has no anchor. Entries that match no pod are not filed.
type termIndex struct {
	byLabel map[string]map[string][]int32 // label key → value → entries
	always  []int32
}

// add files entry id, which a pod matches when it matches every one of
// sels: under the anchor of the first that has one.
func (x *termIndex) add(id int32, sels ...labels.Selector) {
	var key string
	var values []string
	anchored := false
	for _, sel := range sels {
		k, v, ok, matches := anchor(sel)
		if !matches {
			return
		}
		if ok && !anchored {
			key, values, anchored = k, v, true
		}
	}
	if !anchored {
		x.always = append(x.always, id)
		return
	}
	if x.byLabel == nil {
		x.byLabel = map[string]map[string][]int32{}
	}
	byValue := x.byLabel[key]
	if byValue == nil {
		byValue = map[string][]int32{}
		x.byLabel[key] = byValue
	}
	for _, v := range values {
		if !slices.Contains(byValue[v], id) {
			byValue[v] = append(byValue[v], id)
		}
	}
}

// candidates appends to buf the entries a pod with podLabels may match,
// each once, in no particular order.
func (x *termIndex) candidates(podLabels map[string]string, buf []int32) []int32 {
	if len(x.byLabel) > 0 {
		for k, v := range podLabels {
			if byValue := x.byLabel[k]; byValue != nil {
				buf = append(buf, byValue[v]...)
			}
		}
	}
	return append(buf, x.always...)
}

// namespaceLabels is what a term's namespaceSelector sees of namespace ns:
// its labels when known, else the kubernetes.io/metadata.name label the API
// server puts on every namespace.
func namespaceLabels(known map[string]map[string]string, ns string) labels.Set {
	if l, ok := known[ns]; ok {
		return l
	}
	return labels.Set{corev1.LabelMetadataName: ns}
}

// HasPodAffinity reports whether the pod affinity of a pod has any term.
func HasPodAffinity(a *corev1.PodAffinity, anti *corev1.PodAntiAffinity) bool {
	return (a != nil && (len(a.RequiredDuringSchedulingIgnoredDuringExecution) > 0 || len(a.PreferredDuringSchedulingIgnoredDuringExecution) > 0)) ||
		(anti != nil && (len(anti.RequiredDuringSchedulingIgnoredDuringExecution) > 0 || len(anti.PreferredDuringSchedulingIgnoredDuringExecution) > 0))
}
