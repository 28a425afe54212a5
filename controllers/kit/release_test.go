package kit

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcscheme "volcano.sh/apis/pkg/client/clientset/versioned/scheme"
)

// What ends a quarantine: a new object of the name, a new spec, or a new value of the release
// annotation; a status or label change does not.
func TestChangedEndsAQuarantine(t *testing.T) {
	base := func() *batch.Job {
		return &batch.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", UID: "u1", Generation: 1,
			Labels: map[string]string{"a": "1"}, Annotations: map[string]string{ReleaseAnnotation: "1"}}}
	}
	long := func(j *batch.Job) { j.Annotations[ReleaseAnnotation] = strings.Repeat("x", 257) }
	if Changed(with(base(), func(j *batch.Job) { delete(j.Annotations, ReleaseAnnotation) }), with(base(), long)) {
		t.Error("a value longer than a cache keeps, against none (a summary against its Job), reads as a change")
	}
	for _, c := range []struct {
		name string
		edit func(*batch.Job)
		want bool
	}{
		{"nothing", func(*batch.Job) {}, false},
		{"status", func(j *batch.Job) { j.Status.State.Phase = batch.Running }, false},
		{"label", func(j *batch.Job) { j.Labels["a"] = "2" }, false},
		{"spec", func(j *batch.Job) { j.Generation = 2 }, true},
		{"re-created", func(j *batch.Job) { j.UID = "u2" }, true},
		{"release annotation", func(j *batch.Job) { j.Annotations[ReleaseAnnotation] = "2" }, true},
		{"release annotation removed", func(j *batch.Job) { delete(j.Annotations, ReleaseAnnotation) }, true},
	} {
		cur := base()
		c.edit(cur)
		if got := Changed(base(), cur); got != c.want {
			t.Errorf("%s: Changed = %v, want %v", c.name, got, c.want)
		}
	}
}

func with(j *batch.Job, edit func(*batch.Job)) *batch.Job { edit(j); return j }

// The Quarantined Event says why, that nothing else waits, and how to release the object
// without changing it: the annotate command with its resource, one kubectl cannot take for
// batch/v1's Job, and its name. A reason of any length leaves the message bounded.
func TestQuarantinedEventSaysHowToRelease(t *testing.T) {
	rec := record.NewFakeRecorder(1)
	b := &Base[int]{Log: hclog.NewNullLogger(), Recorder: rec, scheme: vcscheme.Scheme}
	job := &batch.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train"}}
	b.tellQuarantine(func(string) runtime.Object { return job }, "ns/train", "its reconcile panicked: boom")
	ev := <-rec.Events
	for _, want := range []string{"Warning Quarantined", "its reconcile panicked: boom", "Nothing else is held up",
		"kubectl annotate --overwrite jobs.batch.volcano.sh/train " + ReleaseAnnotation + "="} {
		if !strings.Contains(ev, want) {
			t.Errorf("event %q does not say %q", ev, want)
		}
	}
}

func TestQuarantineMessageIsBounded(t *testing.T) {
	msg := QuarantineMessage("jobs.batch.volcano.sh/train", "its reconcile panicked: "+strings.Repeat("é", 1<<20))
	if len(msg) > maxQuarantineMessage+len("…") || !utf8.ValidString(msg) {
		t.Errorf("message of %d bytes (valid UTF-8 %v), want at most %d", len(msg), utf8.ValidString(msg), maxQuarantineMessage+len("…"))
	}
}
