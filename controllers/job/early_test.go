package job

import (
	"fmt"
	"math"
	"testing"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// A gain's look at its unsettled Jobs before their pods are listed puts the
// Pending Jobs whose status counts every pod they ask for behind the others:
// those wait for their pods to run, while a new Job, one mid-way through a
// restart and one whose PodGroup was admitted before its pods were made have
// work to do. Settled Jobs wait for SlotsReady.
func TestSlotsEarlyPutsJobsWaitingForTheirPodsLast(t *testing.T) {
	status := func(phase batch.JobPhase, pending, running int32) batch.JobStatus {
		return batch.JobStatus{State: batch.JobState{Phase: phase}, Pending: pending, Running: running}
	}
	waiting := testJob("a-waiting", task("main", 2))
	waiting.Status = status(batch.Pending, 1, 1)
	fresh := testJob("b-new", task("main", 2))
	fresh.Status = batch.JobStatus{}
	restarting := testJob("c-restarting", task("main", 2))
	restarting.Status = status(batch.Restarting, 2, 0)
	admitted := testJob("d-admitted", task("main", 2))
	admitted.Status = status(batch.Pending, 0, 0)
	running := testJob("e-running", task("main", 2))
	running.Status = status(batch.Running, 0, 2)
	f := newFixture(t, nil, waiting, fresh, restarting, admitted, running)
	all := make([]int, f.c.cfg.Ownership.Slots())
	for i := range all {
		all[i] = i
	}
	got := f.requestsOf(t, func() { f.c.SlotsEarly(all) })
	var order []string
	for _, e := range got {
		order = append(order, e.key)
	}
	if len(order) != 4 {
		t.Fatalf("looked at %q, want the four unsettled Jobs", order)
	}
	if order[3] != "ns/a-waiting" {
		t.Errorf("looked at %q: the Job waiting for its pods to run is not last", order)
	}
	for _, key := range order {
		if key == "ns/e-running" {
			t.Errorf("looked at %q: the Running Job is looked at before its pods are listed", order)
		}
	}
}

func TestWaitsForItsPodsCountsEveryTask(t *testing.T) {
	job := testJob("j", task("a", 2), task("b", 3))
	job.Status = batch.JobStatus{State: batch.JobState{Phase: batch.Pending}, Pending: 2, Running: 2}
	if waitsForItsPods(job) {
		t.Error("4 of 5 pods counted: the Job still has a pod to make")
	}
	job.Status.Succeeded = 1
	if !waitsForItsPods(job) {
		t.Error("5 of 5 pods counted: the Job only waits for them")
	}
	job.Status.State.Phase = batch.Restarting
	if waitsForItsPods(job) {
		t.Error("a Restarting Job is mid-way, not waiting")
	}
	huge := testJob("h", task("a", math.MaxInt32), task("b", math.MaxInt32))
	huge.Status = batch.JobStatus{State: batch.JobState{Phase: batch.Pending}, Pending: math.MaxInt32, Running: math.MaxInt32}
	if !waitsForItsPods(huge) {
		t.Error("two tasks of 2^31-1 pods, all counted: the sum must not overflow")
	}
	huge.Status.Running--
	if waitsForItsPods(huge) {
		t.Error("one pod of 2^32-2 not counted: the Job still has a pod to make")
	}
	empty := testJob("e")
	empty.Status.State.Phase = batch.Pending
	if waitsForItsPods(empty) {
		t.Error("a Job of no task waits for nothing")
	}
}

// The Jobs waiting for their pods take only what room the limit leaves after
// the others: however many there are, a new Job is looked at early.
func TestSlotsEarlyLimitServesTheOthersFirst(t *testing.T) {
	var jobs []*batch.Job
	for i := range EarlyJobsLimit + 5 {
		j := testJob(fmt.Sprintf("w%03d", i), task("main", 1))
		j.Status = batch.JobStatus{State: batch.JobState{Phase: batch.Pending}, Pending: 1}
		jobs = append(jobs, j)
	}
	fresh := testJob("new", task("main", 1))
	fresh.Status = batch.JobStatus{}
	f := newFixture(t, nil, append(jobs, fresh)...)
	all := make([]int, f.c.cfg.Ownership.Slots())
	for i := range all {
		all[i] = i
	}
	got := f.requestsOf(t, func() { f.c.SlotsEarly(all) })
	if len(got) != EarlyJobsLimit {
		t.Errorf("looked at %d Jobs early, want the limit, %d", len(got), EarlyJobsLimit)
	}
	if len(got) == 0 || got[0].key != "ns/new" {
		t.Errorf("the new Job is not looked at first among %d waiting ones", len(jobs))
	}
}
