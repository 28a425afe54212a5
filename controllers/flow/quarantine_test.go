package flow

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/record"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/shard"
)

// A JobFlow whose running step's Job ringfire quarantined says so once, naming the Job and the
// command that releases it.
func TestReconcileSaysAStepJobIsQuarantined(t *testing.T) {
	ring := localetcd.StartForTest(t)
	client := localetcd.ClientForTest(t, ring.Endpoint())
	qcfg := shard.DefaultQuarantineConfig()
	qcfg.Client, qcfg.Prefix, qcfg.Member, qcfg.MemoryBudget = client, "/fq", "r0", -1
	q, err := shard.NewQuarantine(qcfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.Run(ctx)

	f := newFixture(t)
	f.c.cfg.Quarantine = q
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
	b, _ := json.Marshal(shard.Mark{Member: "r1", Reason: "its reconcile panicked: boom", UID: string(a.UID)})
	if _, err := client.Put(ctx, "/fq/quarantine/job/"+ns+"/"+a.Name, string(b)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, held := q.Held("job", ns+"/"+a.Name, string(a.UID)); !held; _, held = q.Held("job", ns+"/"+a.Name, string(a.UID)) {
		if time.Now().After(deadline) {
			t.Fatal("the mark never reached the quarantine")
		}
		time.Sleep(10 * time.Millisecond)
	}
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
