package plan

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/controllers/job/build"
	"github.com/ringfire/ringfire/controllers/kit"
)

// Volcano's job controller, on every sync of a Job, looks at the latest true
// condition of its PodGroup and, unless it is Scheduled, records a Warning
// PodGroupPending on the Job: "PodGroup <namespace>:<job> unschedulable,
// reason: <the condition's message>". It leaves the repeats to client-go's
// correlator, which folds them into the count of one Event, each repeat
// still a PATCH. ringfire records it once per story instead: when the
// condition appears, and again only when its type, reason or wording
// (kit.Wording) changes, not with every amount in it that moves; a story
// that ends and comes back is told again.

// PendingCondition is the PodGroup's latest true condition (by transition
// time, the first of equals), if it is not Scheduled: why the scheduler has
// not started the gang.
func PendingCondition(pg *scheduling.PodGroup) *scheduling.PodGroupCondition {
	if pg == nil {
		return nil
	}
	var latest *scheduling.PodGroupCondition
	for i := range pg.Status.Conditions {
		c := &pg.Status.Conditions[i]
		if c.Status == corev1.ConditionTrue && (latest == nil || c.LastTransitionTime.After(latest.LastTransitionTime.Time)) {
			latest = c
		}
	}
	if latest == nil || latest.Type == scheduling.PodGroupScheduled {
		return nil
	}
	return latest
}

// PendingStory is what a PodGroupPending Event tells of c, without the
// amounts: two conditions of the same story are told once. Empty for none.
func PendingStory(c *scheduling.PodGroupCondition) string {
	if c == nil {
		return ""
	}
	return string(c.Type) + "\x00" + c.Reason + "\x00" + kit.Wording(c.Message)
}

// podGroupPendingMessage is the message of the PodGroupPending Event, as
// Volcano words it (it names the Job, not the PodGroup).
func podGroupPendingMessage(job *batch.Job, c *scheduling.PodGroupCondition) string {
	return fmt.Sprintf("PodGroup %s:%s %s, reason: %s", job.Namespace, job.Name, strings.ToLower(string(c.Type)), c.Message)
}

// tooFewPods reports whether the condition says the gang has too few pods
// (ringfire's scheduler's reasons NotEnoughTasks and NotEnoughPodsOfTask). It
// says so too while the Job's pods are being made, and until it looks again
// after they are, which Volcano's scheduler does not write: that is no story
// to tell, unless the Job is really short of pods (podsShort).
func tooFewPods(c *scheduling.PodGroupCondition) bool {
	return c.Reason == scheduling.NotEnoughPodsReason || c.Reason == scheduling.NotEnoughPodsOfTaskReason
}

// podsShort reports whether the Job, having made every pod it can for now,
// still has fewer than its gang needs before any of them is placed:
// minAvailable pods that are pending, running or succeeded, or, when
// minAvailable is at least the tasks' minAvailable summed (then the
// scheduler enforces those), a task's minAvailable of its own. A Job whose
// tasks wait on dependsOn can be (GangProblem).
func podsShort(job *batch.Job, counts Counts) bool {
	live := func(ts batch.TaskState) int32 {
		return ts.Phase[corev1.PodPending] + ts.Phase[corev1.PodRunning] + ts.Phase[corev1.PodSucceeded]
	}
	var all, sum int32
	for _, ts := range counts.Tasks {
		all += live(ts)
	}
	if all < job.Spec.MinAvailable {
		return true
	}
	for i := range job.Spec.Tasks {
		sum += build.MinTaskMember(&job.Spec.Tasks[i])
	}
	if job.Spec.MinAvailable < sum {
		return false
	}
	for i := range job.Spec.Tasks {
		t := &job.Spec.Tasks[i]
		if live(counts.Tasks[t.Name]) < build.MinTaskMember(t) {
			return true
		}
	}
	return false
}

// Story is something a Job tells once in an Event while it lasts: Key tells two stories apart
// (the controller remembers the last one told per Job), Message is what the Event says. An
// empty Key is no story: it ends the last one, so that the next is told even if it is the
// same again.
type Story struct {
	Key     string
	Message string
}

// podGroupStory is the PodGroupPending story of the Job's PodGroup after a sync whose pods,
// those being created counted as pending, are counts.
func podGroupStory(job *batch.Job, pg *scheduling.PodGroup, counts Counts) Story {
	cond := PendingCondition(pg)
	if cond != nil && tooFewPods(cond) && !podsShort(job, counts) {
		cond = nil // the scheduler has not seen the pods the Job made yet
	}
	if cond == nil {
		return Story{}
	}
	return Story{Key: PendingStory(cond), Message: podGroupPendingMessage(job, cond)}
}
