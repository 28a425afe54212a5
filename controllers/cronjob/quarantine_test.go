package cronjob

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/shard"
)

// A Forbid CronJob whose active Job ringfire quarantined says so, once per schedule time it
// skips, naming the Job and the command that releases it; a mark of another Job of the name
// (another UID) is not this Job's.
func TestSyncForbidSaysItsActiveJobIsQuarantined(t *testing.T) {
	ring := localetcd.StartForTest(t)
	client := localetcd.ClientForTest(t, ring.Endpoint())
	qcfg := shard.DefaultQuarantineConfig()
	qcfg.Client, qcfg.Prefix, qcfg.Member, qcfg.MemoryBudget = client, "/cq", "r0", -1
	q, err := shard.NewQuarantine(qcfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.Run(ctx)

	now := t0.Add(2*time.Minute + time.Second)
	prev := t0.Add(time.Minute)
	for _, tc := range []struct {
		name, uid string
		want      bool
	}{{"its own mark", "", true}, {"another Job's mark", "uid-of-another", false}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, now)
			f.c.cfg.Quarantine = q
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
			b, _ := json.Marshal(shard.Mark{Member: "r1", Reason: "its reconcile panicked: boom", UID: uid})
			if _, err := client.Put(ctx, "/cq/quarantine/job/"+ns+"/"+job.Name, string(b)); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for _, held := q.Held("job", ns+"/"+job.Name, ""); !held; _, held = q.Held("job", ns+"/"+job.Name, "") {
				if time.Now().After(deadline) {
					t.Fatal("the mark never reached the quarantine")
				}
				time.Sleep(10 * time.Millisecond)
			}
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
			if _, err := client.Delete(ctx, "/cq/quarantine/job/"+ns+"/"+job.Name); err != nil {
				t.Fatal(err)
			}
		})
	}
}
