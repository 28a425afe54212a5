package flow

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/record"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/internal/shardtest"
	"github.com/ringfire/ringfire/shard"
)

// A JobFlow whose running step's Job ringfire quarantined says so once, naming the Job and the
// command that releases it.
func TestReconcileSaysAStepJobIsQuarantined(t *testing.T) {
	q := shardtest.StartQuarantine(t)
	f := newFixture(t)
	f.c.cfg.Quarantine = q.Quarantine
	rec := record.NewFakeRecorder(100)
	f.c.Recorder = rec
	jf := flowOf("etl", step("a"), step("b", "a"))
	f.add(jf, templateOf("a"), templateOf("b"))
	key := ns + "/etl"
	f.reconcile(key)
	a := f.made(jf, "a", batch.Running)
	a.UID = "uid-a"
	if err := f.c.jobInf.GetIndexer().Add(a); err != nil {
		t.Fatal(err)
	}
	q.Mark(t, "job", ns+"/"+a.Name, string(a.UID))
	f.reconcile(key)
	f.reconcile(key)
	var told []string
	for len(rec.Events) > 0 {
		if ev := <-rec.Events; strings.Contains(ev, reasonQuarantined) {
			told = append(told, ev)
		}
	}
	if len(told) != 1 || !strings.Contains(told[0], "kubectl annotate --overwrite jobs.batch.volcano.sh/"+a.Name+" "+shard.ReleaseAnnotation) {
		t.Errorf("told %v; want one Warning naming the Job and how to release it", told)
	}
}
