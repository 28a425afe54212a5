package state

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// verdict is what spec.podFailurePolicy makes of one failed pod.
type verdict struct {
	// rule is the action of the first rule the pod matched, "" when none
	// did (or the Job has no policy).
	rule batchv1.PodFailurePolicyAction
	// counts: the failure counts against backoffLimit and, for
	// backoffLimitPerIndex, against its index. Only Ignore makes it false.
	counts bool
	// failJob is the Job's failure message when a FailJob rule matched.
	failJob string
}

// judge applies the Job's pod failure policy to a failed pod. The rules are
// tried in order and the first one that matches decides. A Job without a
// policy counts every failure.
//
// The API server only accepts a policy when the pod template's restartPolicy
// is Never, so a failed pod here is a pod that will not restart in place.
func judge(job *batchv1.Job, p *corev1.Pod) verdict {
	policy := job.Spec.PodFailurePolicy
	if policy == nil {
		return verdict{counts: true}
	}
	for i, rule := range policy.Rules {
		var failMsg string
		switch {
		case rule.OnExitCodes != nil:
			cs := exitCodeMatch(&p.Status, rule.OnExitCodes)
			if cs == nil {
				continue
			}
			failMsg = fmt.Sprintf("Container %s for pod %s/%s failed with exit code %v matching %v rule at index %d",
				cs.Name, p.Namespace, p.Name, cs.State.Terminated.ExitCode, rule.Action, i)
		case rule.OnPodConditions != nil:
			cond := podConditionMatch(&p.Status, rule.OnPodConditions)
			if cond == nil {
				continue
			}
			failMsg = fmt.Sprintf("Pod %s/%s has condition %v matching %v rule at index %d",
				p.Namespace, p.Name, cond.Type, rule.Action, i)
		default:
			continue
		}
		switch rule.Action {
		case batchv1.PodFailurePolicyActionIgnore:
			return verdict{rule: rule.Action}
		case batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyActionCount:
			return verdict{rule: rule.Action, counts: true}
		case batchv1.PodFailurePolicyActionFailJob:
			return verdict{rule: rule.Action, counts: true, failJob: failMsg}
		}
		// An action this version does not know: the rule is passed over.
	}
	return verdict{counts: true}
}

// exitCodeMatch finds the first terminated container (regular ones before
// init ones) with a non-zero exit code that the requirement selects.
func exitCodeMatch(st *corev1.PodStatus, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	find := func(list []corev1.ContainerStatus) *corev1.ContainerStatus {
		for i := range list {
			cs := &list[i]
			t := cs.State.Terminated
			if t == nil || t.ExitCode == 0 {
				continue // still running (or stopping), or a clean exit
			}
			if req.ContainerName != nil && *req.ContainerName != cs.Name {
				continue
			}
			in := slices.Contains(req.Values, t.ExitCode)
			switch req.Operator {
			case batchv1.PodFailurePolicyOnExitCodesOpIn:
				if in {
					return cs
				}
			case batchv1.PodFailurePolicyOnExitCodesOpNotIn:
				if !in {
					return cs
				}
			}
		}
		return nil
	}
	if cs := find(st.ContainerStatuses); cs != nil {
		return cs
	}
	return find(st.InitContainerStatuses)
}

// podConditionMatch returns the first of the pod's conditions (in the pod's
// order) that some pattern names with the same status.
func podConditionMatch(st *corev1.PodStatus, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) *corev1.PodCondition {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		for _, pat := range patterns {
			if c.Type == pat.Type && c.Status == pat.Status {
				return c
			}
		}
	}
	return nil
}

// failJobMessage looks through every failed pod of the Job, in name order,
// for one that a FailJob rule matches, and returns its message.
func (s *sync) failJobMessage() (string, bool) {
	if s.job.Spec.PodFailurePolicy == nil {
		return "", false
	}
	pods := append([]*corev1.Pod(nil), s.in.Pods...)
	sortByName(pods)
	for _, p := range pods {
		if !s.countsAsFailed(p) {
			continue
		}
		if v := s.verdictOf(p); v.failJob != "" {
			return v.failJob, true
		}
	}
	return "", false
}

// verdictOf is judge, remembered per pod for the length of the sync.
func (s *sync) verdictOf(p *corev1.Pod) verdict {
	if v, ok := s.verdicts[p]; ok {
		return v
	}
	if s.verdicts == nil {
		s.verdicts = map[*corev1.Pod]verdict{}
	}
	v := judge(s.job, p)
	s.verdicts[p] = v
	return v
}

// countedFailures is how many of the pods count as failures under the
// policy (Ignore leaves a failure out of status.failed and backoffLimit).
func (s *sync) countedFailures(pods []*corev1.Pod) int32 {
	var n int32
	for _, p := range pods {
		if s.verdictOf(p).counts {
			n++
		}
	}
	return n
}
