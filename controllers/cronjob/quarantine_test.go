package cronjob

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/internal/shardtest"
	"github.com/ringfire/ringfire/shard"
)

// A Forbid CronJob whose active Job ringfire quarantined says so, once per schedule time it
// skips, naming the Job and the command that releases it; a mark of another Job of the name
// (another UID) is not this Job's.
func TestSyncForbidSaysItsActiveJobIsQuarantined(t *testing.T) {
	q := shardtest.StartQuarantine(t)

	now := t0.Add(2*time.Minute + time.Second)
	prev := t0.Add(time.Minute)
	for _, tc := range []struct {
		name, uid string
		want      bool
	}{{"its own mark", "", true}, {"another Job's mark", "uid-of-another", false}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, now)
			f.c.cfg.Quarantine = q.Quarantine
			cj := newCronJob("p", "* * * * *", t0.Add(-time.Second))
			cj.Spec.ConcurrencyPolicy = batch.ForbidConcurrent
			job := ownedJob(cj, prev, batch.Running, prev.Add(10*time.Second))
			job.UID = "uid-of-the-job"
			cj.Status.LastScheduleTime = &metav1.Time{Time: prev}
			cj.Status.Active = []corev1.ObjectReference{refOf(job)}
			f.add(cj, job)
			uid := tc.uid
			if uid == "" {
				uid = string(job.UID)
			}
			q.Mark(t, "job", ns+"/"+job.Name, uid)
			f.mustSync("p")
			f.mustSync("p") // the same schedule time: told once
			var told []string
			for _, ev := range f.eventsSeen() {
				if strings.Contains(ev, "ActiveJobQuarantined") {
					told = append(told, ev)
				}
			}
			switch {
			case !tc.want && len(told) > 0:
				t.Errorf("told of another Job's mark: %v", told)
			case tc.want && len(told) != 1:
				t.Errorf("told %d times, want once: %v", len(told), told)
			case tc.want && !strings.Contains(told[0], "kubectl annotate --overwrite jobs.batch.volcano.sh/"+job.Name+" "+shard.ReleaseAnnotation):
				t.Errorf("the Event does not say how to release the Job: %s", told[0])
			}
			q.Unmark(t, "job", ns+"/"+job.Name)
		})
	}
}
