package jobtest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/shard"
)

// A quarantine mark holds the Job it was written for, and no other, on two replicas:
//   - a mark of an earlier Job of the name (deleted while no replica watched, so its mark
//     stayed) does not hold the Job made again under that name, which runs to Completed, and
//     the mark goes;
//   - a mark of the Job's own UID holds it, with a Warning Event that says how to release it
//     and the reason Quarantined in its status.state;
//     a new value of ringfire.io/release-quarantine releases it and it completes, its pods
//     kept;
//   - the mark of a Job that is gone is swept.
func TestQuarantineMarksFollowTheirJob(t *testing.T) {
	prev := shard.QuarantineSweep
	shard.QuarantineSweep = 2 * time.Second
	t.Cleanup(func() { shard.QuarantineSweep = prev })
	s := stack.Start(t, stack.Options{Replicas: 2, StandIn: true})
	etcd := localetcd.ClientForTest(t, s.Ring.Endpoint())
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	markKey := func(name string) string {
		return strings.TrimSuffix(s.Prefix, "/") + "/quarantine/job/" + ns + "/" + name
	}
	mark := func(name string, uid types.UID) {
		b, _ := json.Marshal(shard.Mark{Member: "r9", Incarnation: "gone", Reason: "jobtest's mark", Since: time.Now().UTC(), UID: string(uid)})
		if _, err := etcd.Put(ctx, markKey(name), string(b)); err != nil {
			t.Fatal(err)
		}
	}
	marked := func(name string) bool {
		resp, err := etcd.Get(ctx, markKey(name))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Count > 0
	}
	waitUnmarked := func(name string, limit time.Duration) {
		t.Helper()
		for deadline := time.Now().Add(limit); marked(name); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the mark of %s still there after %v", name, limit)
			}
		}
	}

	// An earlier Job's mark, then the Job made again.
	mark("recreated", "uid-of-an-earlier-job")
	time.Sleep(time.Second) // the replicas follow the marks
	vcjob.Create(t, s.Volcano, vcjob.New(ns, "recreated", vcjob.Task("worker", 2, "1s", "")))
	s.WaitPhase(ns, "recreated", 90*time.Second, batch.Completed)
	waitUnmarked("recreated", 10*time.Second)

	// The Job's own mark holds it; the annotation releases it.
	job := vcjob.Create(t, s.Volcano, vcjob.New(ns, "held", vcjob.Task("worker", 2, "8s", "")))
	s.WaitPhase(ns, "held", 60*time.Second, batch.Running)
	mark("held", job.UID)
	deadline := time.Now().Add(60 * time.Second)
	var told []string
	for len(told) == 0 && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		told = s.Events(ns, "held", "Quarantined")
	}
	if len(told) == 0 {
		t.Fatalf("no Quarantined Event on a Job whose own UID is marked\n%s", s.Describe(ns, "held"))
	}
	if !strings.Contains(told[0], "kubectl annotate --overwrite jobs.batch.volcano.sh/held "+shard.ReleaseAnnotation+"=") {
		t.Errorf("the Quarantined Event does not say how to release the Job: %q", told[0])
	}
	// Its status says so too, its phase kept.
	var st batch.JobState
	for deadline := time.Now().Add(10 * time.Second); st.Reason != "Quarantined" && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		got, err := s.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, "held", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st = got.Status.State
	}
	if st.Reason != "Quarantined" || st.Phase != batch.Running || !strings.Contains(st.Message, shard.ReleaseAnnotation) {
		t.Fatalf("the held Job's state %+v; want phase Running, reason Quarantined and a message that says how to release it", st)
	}
	time.Sleep(10 * time.Second) // its pods end meanwhile; nothing reconciles it
	if got, _ := s.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, "held", metav1.GetOptions{}); got.Status.State.Phase != batch.Running {
		t.Errorf("a quarantined Job went on to %s", got.Status.State.Phase)
	}
	patch := []byte(`{"metadata":{"annotations":{"` + shard.ReleaseAnnotation + `":"1"}}}`)
	if _, err := s.Volcano.BatchV1alpha1().Jobs(ns).Patch(ctx, "held", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	got := s.WaitPhase(ns, "held", 60*time.Second, batch.Completed)
	if got.Status.State.Reason != "" {
		t.Errorf("the released Job's state still says %q: %q", got.Status.State.Reason, got.Status.State.Message)
	}
	if got.Status.Succeeded != 2 || got.Status.RetryCount != 0 {
		t.Errorf("the released Job: succeeded %d retries %d, want its 2 pods kept and no retry", got.Status.Succeeded, got.Status.RetryCount)
	}
	waitUnmarked("held", 10*time.Second)

	// The mark of a Job that does not exist goes with the sweep.
	mark("never", "uid-of-a-job-gone")
	waitUnmarked("never", 30*time.Second)
}
