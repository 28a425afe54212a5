package plan

import (
	"fmt"
	"strings"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/build"
	"github.com/ringfire/ringfire/controllers/job/state"
)

// ReasonInvalidReference is the reason, in status.state and in a Warning Event, of a Job
// waiting for a Queue or PriorityClass (Input.MissingReference).
const ReasonInvalidReference = "InvalidReference"

// ReasonMinAvailableUnreachable is the reason, in status.state and in a
// Warning Event, of a Pending Job whose gang can never start (gangProblem).
const ReasonMinAvailableUnreachable = "MinAvailableUnreachable"

// GangProblem says why the gang of the (defaulted) Job can never start, or
// is empty. The pods of a task that dependsOn others are created only once
// those run; the scheduler starts no pod of the gang until minAvailable pods
// exist, and each task's minAvailable of its own when spec.minAvailable is at
// least their sum (Volcano's rule, build.MinTaskMember). Counting the pods of
// a waiting task in either, the Job waits for ever, as in Volcano, whose
// PodGroup then only says "pod group is not ready". This says what to change.
func GangProblem(job *batch.Job) string {
	var early int32 // the pods of tasks that wait for none: all that can exist before one runs
	var sum int32   // the tasks' minAvailable, summed
	var earlyTasks, waiting, blocking []string
	var blockingMin int32 // the minAvailable of the first of blocking
	for i := range job.Spec.Tasks {
		t := &job.Spec.Tasks[i]
		n := build.MinTaskMember(t)
		sum = state.SumInt32(sum, n) // saturated: a spec beyond the limits must not wrap
		if t.DependsOn == nil || len(t.DependsOn.Name) == 0 {
			early = state.SumInt32(early, t.Replicas)
			earlyTasks = append(earlyTasks, t.Name)
			continue
		}
		waiting = append(waiting, t.Name)
		if n > 0 {
			if len(blocking) == 0 {
				blockingMin = n
			}
			blocking = append(blocking, t.Name)
		}
	}
	need := job.Spec.MinAvailable
	enforced := need >= sum // the tasks' own minimums count only then
	if len(waiting) == 0 || early >= need && (!enforced || len(blocking) == 0) {
		return ""
	}
	// The largest minAvailable that lets the Job start: no more than the early pods, and
	// below the tasks' sum if a waiting task's own minimum would be enforced otherwise.
	fit := early
	if len(blocking) > 0 && fit >= sum {
		fit = sum - 1
	}
	fix := fmt.Sprintf("set minAvailable: 0 on %s and leave spec.minAvailable out", taskList(blocking))
	if len(blocking) == 0 {
		fix = fmt.Sprintf("leave spec.minAvailable out (the tasks' minAvailable, summed, is %d)", sum)
	}
	if fit > 0 {
		fix = fmt.Sprintf("lower spec.minAvailable to %d, or %s", fit, fix)
	}
	if early < need {
		return fmt.Sprintf("minAvailable %d counts the pods of %s, which are created only after the tasks they dependsOn run, "+
			"but no pod of the Job runs until minAvailable pods exist, and only %d can exist before then (%s): "+
			"the Job waits for ever; %s", need, taskList(waiting), early, taskList(earlyTasks), fix)
	}
	return fmt.Sprintf("%s's minAvailable %d must be met before any pod of the Job runs (spec.minAvailable %d covers "+
		"every task's minAvailable), but its pods are created only after the tasks it dependsOn run: the Job waits for ever; %s",
		taskList(blocking[:1]), blockingMin, need, fix)
}

// taskList names tasks for a message: "task a", "tasks a, b".
func taskList(names []string) string {
	switch len(names) {
	case 0:
		return "no task"
	case 1:
		return "task " + names[0]
	}
	return "tasks " + strings.Join(names, ", ")
}

// heldState is the reason and message of status.state after a sync of a
// Job in phase: why a Pending Job can never start, if problem says so; a
// reason ringfire gave for an earlier wait (a missing reference, a gang that
// could not start) is over once the Job syncs without it; Volcano's own are
// kept.
func heldState(phase batch.JobPhase, reason, message, problem string) (string, string) {
	if phase == batch.Pending && problem != "" {
		return ReasonMinAvailableUnreachable, problem
	}
	if reason == ReasonInvalidReference || reason == ReasonMinAvailableUnreachable || reason == state.ReasonTooLarge {
		return "", ""
	}
	return reason, message
}
