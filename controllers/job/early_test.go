package job

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/cache"
)

// A Job read early is read again for its PodGroup's admission only while it
// is pending and its PodGroup is missing or not admitted, and at a pace that
// follows the age of the gain: a handful of reads however long the slot's
// PodGroups take to list.
func TestEarlyRecheck(t *testing.T) {
	info := func(phase batch.JobPhase, pg *scheduling.PodGroupPhase) *cache.JobInfo {
		in := &cache.JobInfo{Job: &batch.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}}}
		in.Job.Status.State.Phase = phase
		if pg != nil {
			in.PodGroup = &scheduling.PodGroup{Status: scheduling.PodGroupStatus{Phase: *pg}}
		}
		return in
	}
	phase := func(p scheduling.PodGroupPhase) *scheduling.PodGroupPhase { return &p }
	for _, c := range []struct {
		job  batch.JobPhase
		pg   *scheduling.PodGroupPhase
		want bool
	}{
		{"", nil, true},
		{batch.Pending, nil, true},
		{batch.Pending, phase(""), true},
		{batch.Pending, phase(scheduling.PodGroupPending), true},
		{batch.Pending, phase(scheduling.PodGroupInqueue), false},
		{batch.Pending, phase(scheduling.PodGroupRunning), false},
		{batch.Running, phase(scheduling.PodGroupPending), false},
		{batch.Restarting, nil, false},
		{batch.Completed, nil, false},
	} {
		if got := awaitsAdmission(info(c.job, c.pg)); got != c.want {
			pg := "none"
			if c.pg != nil {
				pg = string(*c.pg)
			}
			t.Errorf("job %q, podgroup %s: awaits admission %v, want %v", c.job, pg, got, c.want)
		}
	}

	for _, c := range []struct{ ago, want time.Duration }{
		{0, 250 * time.Millisecond},
		{300 * time.Millisecond, 250 * time.Millisecond},
		{time.Second, 500 * time.Millisecond},
		{3 * time.Second, 1500 * time.Millisecond},
		{time.Minute, 2 * time.Second},
	} {
		if got := earlyRecheck(c.ago); got != c.want {
			t.Errorf("gained %v ago: recheck after %v, want %v", c.ago, got, c.want)
		}
	}
	// Gained t0 ago, read then and at each recheck: the reads in the 10 s
	// that follow stay few.
	reads, at := 0, 500*time.Millisecond
	for at < 10*time.Second+500*time.Millisecond {
		reads++
		at += earlyRecheck(at)
	}
	if reads > 10 {
		t.Errorf("%d reads in the 10 s after a gain, want at most 10", reads)
	}
}
