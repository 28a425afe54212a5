package state

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
)

// successPolicyMet checks spec.successPolicy of an Indexed Job against its
// succeeded indexes. The rules are tried in order; the first one satisfied
// wins, and the message names it. A rule with succeededIndexes needs all of
// those indexes succeeded, or, with succeededCount, at least that many of
// them; a rule with succeededCount alone needs that many indexes of any kind.
// Nothing is met before the first index succeeds.
func successPolicyMet(policy *batchv1.SuccessPolicy, done indexSet, completions int) (string, bool) {
	if policy == nil || done.count() == 0 {
		return "", false
	}
	for i, rule := range policy.Rules {
		met := false
		switch {
		case rule.SucceededIndexes != nil:
			want := parseIndexSet(*rule.SucceededIndexes, completions)
			if want.count() == 0 {
				continue // nothing usable in the rule (malformed or out of range)
			}
			got := want.overlap(done)
			met = got == want.count() || (rule.SucceededCount != nil && got >= int(*rule.SucceededCount))
		case rule.SucceededCount != nil:
			met = done.count() >= int(*rule.SucceededCount)
		}
		if met {
			return fmt.Sprintf("Matched rules at index %d", i), true
		}
	}
	return "", false
}

// overlap counts the indexes in both sets.
func (s indexSet) overlap(other indexSet) int {
	n, i, j := 0, 0, 0
	for i < len(s) && j < len(other) {
		lo, hi := max(s[i].lo, other[j].lo), min(s[i].hi, other[j].hi)
		if hi >= lo {
			n += hi - lo + 1
		}
		if s[i].hi < other[j].hi {
			i++
		} else {
			j++
		}
	}
	return n
}
