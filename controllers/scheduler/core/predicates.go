package core

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The node checks that do not depend on free resources: unschedulable,
// taints, node selector and required node affinity, in kube-scheduler's
// filter order and with its messages. A task's constraints are reduced to a
// signature so that each distinct set is checked against the nodes once per
// cycle, however many pods share it.

const (
	reasonUnschedulable = "node(s) were unschedulable"
	reasonAffinity      = "node(s) didn't match Pod's node affinity/selector"
	reasonTooManyPods   = "Too many pods"
)

// untoleratedTaint is kube-scheduler's message for a taint no toleration covers.
func untoleratedTaint(t corev1.Taint) string {
	return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)
}

// insufficient is kube-scheduler's message for a resource a node lacks.
func insufficient(name corev1.ResourceName) string {
	if name == corev1.ResourcePods {
		return reasonTooManyPods
	}
	return "Insufficient " + string(name)
}

// constraintKey is a canonical text of a task's node constraints; "" when
// it has none. Equal keys mean equal constraints. Fields are separated by
// control bytes, which labels, keys and values cannot contain.
func constraintKey(t *Task) string {
	if len(t.NodeSelector) == 0 && t.Affinity == nil && len(t.Tolerations) == 0 {
		return ""
	}
	var b strings.Builder
	b.Grow(128) // most keys fit: one allocation
	b.WriteByte('s')
	if len(t.NodeSelector) == 1 {
		for k, v := range t.NodeSelector {
			writeFields(&b, 0, k, v)
		}
	} else if len(t.NodeSelector) > 1 {
		keys := make([]string, 0, len(t.NodeSelector))
		for k := range t.NodeSelector {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			writeFields(&b, 0, k, t.NodeSelector[k])
		}
	}
	if t.Affinity != nil {
		b.WriteString("\x02a")
		for _, term := range t.Affinity.NodeSelectorTerms {
			b.WriteString("\x03t")
			writeRequirements(&b, 4, term.MatchExpressions)
			writeRequirements(&b, 5, term.MatchFields)
		}
	}
	b.WriteString("\x02o")
	for _, tol := range t.Tolerations {
		writeFields(&b, 0, tol.Key, string(tol.Operator), tol.Value, string(tol.Effect))
	}
	return b.String()
}

// writeFields writes the lead byte, then the fields each after \x01.
func writeFields(b *strings.Builder, lead byte, fields ...string) {
	b.WriteByte(lead)
	for _, f := range fields {
		b.WriteByte(1)
		b.WriteString(f)
	}
}

func writeRequirements(b *strings.Builder, lead byte, reqs []corev1.NodeSelectorRequirement) {
	for _, r := range reqs {
		writeFields(b, lead, r.Key, string(r.Operator))
		for _, v := range r.Values {
			writeFields(b, 6, v)
		}
	}
}

// staticReason says why the node cannot take a pod with these constraints
// whatever its free resources; "" when it can.
func staticReason(t *Task, n *Node) string {
	if n.Unschedulable && !toleratesUnschedulable(t.Tolerations) {
		return reasonUnschedulable
	}
	for i := range n.Taints {
		taint := &n.Taints[i]
		if taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !toleratesTaint(t.Tolerations, taint) {
			return untoleratedTaint(*taint)
		}
	}
	for k, v := range t.NodeSelector {
		if got, ok := n.Labels[k]; !ok || got != v {
			return reasonAffinity
		}
	}
	if t.Affinity != nil && !matchesNodeSelector(t.Affinity, n) {
		return reasonAffinity
	}
	return ""
}

// toleratesUnschedulable: kube-scheduler lets a pod onto a cordoned node when
// it tolerates the node.kubernetes.io/unschedulable:NoSchedule taint.
func toleratesUnschedulable(tols []corev1.Toleration) bool {
	return toleratesTaint(tols, &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
}

func toleratesTaint(tols []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tols {
		if tolerates(&tols[i], taint) {
			return true
		}
	}
	return false
}

// tolerates is corev1.Toleration.ToleratesTaint for the Equal and Exists
// operators: an empty effect matches every effect, an empty key with Exists
// matches every taint.
func tolerates(tol *corev1.Toleration, taint *corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != taint.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != taint.Key {
		return false
	}
	switch tol.Operator {
	case "", corev1.TolerationOpEqual:
		return tol.Value == taint.Value
	case corev1.TolerationOpExists:
		return true
	default:
		return false
	}
}

// matchesNodeSelector: the terms are ORed, the requirements of a term ANDed.
// A term with no requirements, or one that cannot be parsed, matches nothing;
// so does a selector with no terms.
func matchesNodeSelector(sel *corev1.NodeSelector, n *Node) bool {
	for i := range sel.NodeSelectorTerms {
		term := &sel.NodeSelectorTerms[i]
		if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
			continue
		}
		if matchesTerm(term, n) {
			return true
		}
	}
	return false
}

func matchesTerm(term *corev1.NodeSelectorTerm, n *Node) bool {
	for i := range term.MatchExpressions {
		r := &term.MatchExpressions[i]
		value, ok := n.Labels[r.Key]
		if !matchesRequirement(r, value, ok) {
			return false
		}
	}
	for i := range term.MatchFields {
		r := &term.MatchFields[i]
		// metadata.name is the one field node affinity may select on, and only with In or NotIn.
		if r.Key != "metadata.name" || (r.Operator != corev1.NodeSelectorOpIn && r.Operator != corev1.NodeSelectorOpNotIn) {
			return false
		}
		if !matchesRequirement(r, n.Name, true) {
			return false
		}
	}
	return true
}

// matchesRequirement evaluates one requirement against a label value (ok
// says whether the label is set at all).
func matchesRequirement(r *corev1.NodeSelectorRequirement, value string, ok bool) bool {
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return ok && slices.Contains(r.Values, value)
	case corev1.NodeSelectorOpNotIn:
		return !ok || !slices.Contains(r.Values, value)
	case corev1.NodeSelectorOpExists:
		return ok
	case corev1.NodeSelectorOpDoesNotExist:
		return !ok
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !ok || len(r.Values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(value, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == corev1.NodeSelectorOpGt {
			return have > want
		}
		return have < want
	default:
		return false
	}
}
