package migrationtest

import (
	"fmt"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	busv1 "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/e2e/vcjob"
)

// kind is a kind of Job of the test: how many there are, how they are made,
// what is done to them and the phase each must end in.
type kind struct {
	name  string
	count int
	job   func(name string) *batch.Job
	// atSwitch says whether a Job is where the test wants it when
	// vc-controller-manager stops.
	atSwitch func(*batch.Job) bool
	// before is a Command taken by vc-controller-manager once the Job runs;
	// outstanding is one created while no controller runs, for ringfire.
	before, outstanding busv1.Action
	// final is the phase the Job ends in, as it ends under Volcano alone.
	final batch.JobPhase
	// retries, when positive, is the status.retryCount the Job ends with.
	retries int32
	// keepsPods: nothing the Job owned before the switch may be deleted
	// until the Job is final, and every pod made before ends Succeeded.
	keepsPods bool
}

func running(j *batch.Job) bool { return j.Status.State.Phase == batch.Running }

// The kinds of the first wave: 200 Jobs.
var kinds = []kind{
	{
		// Running through the switch: two tasks, the svc and env plugins on every
		// fourth (their Service, ConfigMap and NetworkPolicy are adopted too).
		name: "run", count: 100, final: batch.Completed, keepsPods: true, atSwitch: running,
		job: func(name string) *batch.Job {
			j := vcjob.New(ns, name, vcjob.Task("master", 1, "70s", ""), vcjob.Task("worker", 1, "70s", ""))
			var n int
			fmt.Sscanf(name, "run-%d", &n)
			if n%4 == 0 {
				j.Spec.Plugins = map[string][]string{"svc": {}, "env": {}}
			}
			return j
		},
	},
	{
		// Pending: each is a gang of two pods of 40 CPUs, more than any node has,
		// until the test adds a bigger node after the switch.
		name: "pend", count: 8, final: batch.Completed, keepsPods: true,
		atSwitch: func(j *batch.Job) bool { return j.Status.State.Phase == batch.Pending },
		job: func(name string) *batch.Job {
			return vcjob.New(ns, name, vcjob.TaskOf("work", 2, vcjob.Runs("12s", ""), "40", vcjob.Memory))
		},
	},
	{
		// Restarted on every pod failure, up to four times: mid-retry at the
		// switch, Failed at the end. Each try runs 15 s: at 10 s a loaded
		// 2-core machine let one reach Failed under Volcano before the
		// other kinds were ready for the switch, and the test stopped.
		name: "retry", count: 30, final: batch.Failed,
		atSwitch: func(j *batch.Job) bool {
			return j.Status.RetryCount >= 1 && j.Status.State.Phase != batch.Failed
		},
		job: func(name string) *batch.Job {
			j := vcjob.New(ns, name, vcjob.Task("work", 1, "15s", "3"))
			j.Spec.MaxRetry = 4
			j.Spec.Policies = []batch.LifecyclePolicy{{Event: busv1.PodFailedEvent, Action: busv1.RestartJobAction}}
			return j
		},
	},
	{name: "abort", count: 10, outstanding: busv1.AbortJobAction, final: batch.Aborted, atSwitch: running, job: commanded},
	{name: "terminate", count: 10, outstanding: busv1.TerminateJobAction, final: batch.Terminated, atSwitch: running, job: commanded},
	{name: "complete", count: 10, outstanding: busv1.CompleteJobAction, final: batch.Completed, atSwitch: running, job: commanded},
	{
		// Restarted by a Command after the switch: its pods run again, to the end.
		name: "restart", count: 10, outstanding: busv1.RestartJobAction, final: batch.Completed, retries: 1, atSwitch: running,
		job: func(name string) *batch.Job {
			return vcjob.New(ns, name, vcjob.Task("work", 2, "60s", ""))
		},
	},
	{
		// Aborted under Volcano, resumed by a Command after the switch.
		name: "resume", count: 10, before: busv1.AbortJobAction, outstanding: busv1.ResumeJobAction, final: batch.Completed,
		atSwitch: func(j *batch.Job) bool { return j.Status.State.Phase == batch.Aborted },
		job: func(name string) *batch.Job {
			return vcjob.New(ns, name, vcjob.Task("work", 1, "15s", ""))
		},
	},
	{
		// Completed by its policy when its master task completes, after the
		// switch; its worker, which would run on, is killed.
		name: "policy", count: 12, final: batch.Completed, atSwitch: running,
		job: func(name string) *batch.Job {
			j := vcjob.New(ns, name, vcjob.Task("master", 1, "50s", ""), vcjob.Task("worker", 1, "1h", ""))
			j.Spec.Policies = []batch.LifecyclePolicy{{Event: busv1.TaskCompletedEvent, Action: busv1.CompleteJobAction}}
			return j
		},
	},
}

// commanded is a Job of two pods that would run for long: a Command ends it.
func commanded(name string) *batch.Job {
	return vcjob.New(ns, name, vcjob.Task("work", 2, "1h", ""))
}

// wave2 is a Job made while ringfire runs and still running when
// vc-controller-manager takes over again.
func wave2(name string) *batch.Job {
	return vcjob.New(ns, name, vcjob.Task("work", 2, "40s", ""))
}
