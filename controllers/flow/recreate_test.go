package flow

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	flowv1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"
)

// A JobFlow deleted and made again under its name while the earlier flow's Completed Job is
// still there (the garbage collector has not deleted it yet): the new flow counts only the
// Jobs its own UID controls, so it neither takes that step as done nor makes its Job over the
// name; it says it waits, and makes the Job once the earlier one is gone.
func TestReCreatedFlowCountsOnlyItsOwnJobs(t *testing.T) {
	f := newFixture(t)
	earlier := flowOf("etl", step("a"))
	earlier.UID = types.UID("uid-flow-etl-earlier")
	old := JobFor(earlier, "a", templateOf("a"))
	old.UID = "uid-job-old"
	old.Status.State.Phase = batch.Completed
	jf := flowOf("etl", step("a"))
	f.add(old, jf, templateOf("a"))
	key := ns + "/etl"

	f.reconcile(key)
	for _, w := range f.writes() {
		if w == "create jobs etl-a" {
			t.Fatal("etl-a made over the earlier flow's Job of that name")
		}
	}
	got, err := f.vc.FlowV1alpha1().JobFlows(ns).Get(context.Background(), "etl", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State.Phase == flowv1.Succeed || len(got.Status.CompletedJobs) != 0 {
		t.Fatalf("the new flow is %s with completed %v: it counted the earlier flow's Job", got.Status.State.Phase, got.Status.CompletedJobs)
	}
	var events []string
	for ev := range drain(f.c.Recorder.(*record.FakeRecorder)) {
		events = append(events, ev)
	}
	want := "waiting for Job etl-a of an earlier JobFlow etl (uid uid-flow-etl-earlier) to be deleted by the garbage collector"
	if len(events) != 1 || !strings.HasSuffix(events[0], want) {
		t.Fatalf("events %q, want one ending %q", events, want)
	}

	// The collector deletes it: the flow of the name is woken and makes its own.
	if err := f.vc.BatchV1alpha1().Jobs(ns).Delete(context.Background(), old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.c.jobInf.GetIndexer().Delete(old); err != nil {
		t.Fatal(err)
	}
	f.vc.ClearActions()
	f.c.onJob(old, true)
	f.reconcile(key)
	made := false
	for _, w := range f.writes() {
		made = made || w == "create jobs etl-a"
	}
	if !made {
		t.Error("etl-a not made once the earlier flow's Job was gone")
	}
}

// drain yields the events recorded so far.
func drain(r *record.FakeRecorder) map[string]bool {
	out := map[string]bool{}
	for {
		select {
		case e := <-r.Events:
			out[e] = true
		default:
			return out
		}
	}
}
