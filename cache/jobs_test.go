package cache

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/shard"
)

func fullJob(name string) *batch.Job {
	return &batch.Job{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: k8stypes.UID("uid-" + name), ResourceVersion: "7",
			Annotations: map[string]string{lastApplied: `{"big":"copy"}`, "note": "not read",
				batch.CronJobScheduledTimestampAnnotation: "2026-01-15T10:03:00Z"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec:   batch.JobSpec{Tasks: []batch.TaskSpec{{Name: "w", Replicas: 3}}},
		Status: batch.JobStatus{State: batch.JobState{Phase: batch.Running}, Running: 3},
	}
}

// Jobs of held slots are kept in full, the others as summaries; a lost slot's
// Jobs are cut back to summaries, and the handlers hear of every stored Job.
func TestJobsKeepOnlyHeldSlotsInFull(t *testing.T) {
	const slots = 8
	j := newJobs(nil, func() int { return slots }, hclog.NewNullLogger(), nil)
	var added int
	j.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { added++ }})
	var list []any
	var mine, others []string
	for i := range 40 {
		job := fullJob(fmt.Sprintf("j%02d", i))
		list = append(list, job)
		if key := "ns/" + job.Name; shard.SlotOf(key, slots) < 4 {
			mine = append(mine, key)
		} else {
			others = append(others, key)
		}
	}
	j.hold([]int{0, 1, 2, 3})
	if err := (jobsStore{j}).Replace(list, "1"); err != nil {
		t.Fatal(err)
	}
	if added != 40 || !j.HasSynced() {
		t.Fatalf("%d adds told, synced %v; want 40, true", added, j.HasSynced())
	}
	for _, key := range mine {
		if job, ok, err := j.Get(key); err != nil || !ok || len(job.Spec.Tasks) != 1 {
			t.Fatalf("%s of a held slot: %v %v %v, want it in full", key, job, ok, err)
		}
	}
	for _, key := range others {
		if _, _, err := j.Get(key); !errors.Is(err, ErrSummaryOnly) {
			t.Fatalf("%s of another slot: err %v, want ErrSummaryOnly", key, err)
		}
		obj, _, _ := j.GetIndexer().GetByKey(key)
		s := obj.(*batch.Job)
		if len(s.Spec.Tasks) != 0 || s.ManagedFields != nil || s.Annotations[lastApplied] != "" ||
			s.Annotations["note"] != "" || s.Annotations[batch.CronJobScheduledTimestampAnnotation] == "" ||
			s.Status.State.Phase != batch.Running || s.UID == "" {
			t.Fatalf("summary of %s: %+v", key, s)
		}
	}
	if j.Summaries() != len(others) {
		t.Fatalf("%d summaries, want %d", j.Summaries(), len(others))
	}
	if full, summaries := j.Counts(); full != len(mine) || summaries != len(others) {
		t.Fatalf("counts: %d full, %d summaries; want %d, %d", full, summaries, len(mine), len(others))
	}
	// Full Jobs keep everything but their managed fields (kubectl's copy stays: an update
	// computed from the cached Job would otherwise drop it from the API server's).
	for _, key := range mine {
		job, _, _ := j.Get(key)
		if job.ManagedFields != nil || job.Annotations[lastApplied] == "" {
			t.Fatalf("full %s: managed fields %v, last-applied %q", key, job.ManagedFields, job.Annotations[lastApplied])
		}
	}
	j.lose([]int{0, 1, 2, 3})
	if j.Summaries() != 40 {
		t.Fatalf("after losing every held slot: %d summaries, want 40", j.Summaries())
	}
	for _, key := range mine {
		if _, _, err := j.Get(key); !errors.Is(err, ErrSummaryOnly) {
			t.Fatalf("%s of a lost slot: err %v, want ErrSummaryOnly", key, err)
		}
	}
	// The reflector's Jobs are not cut down: the summaries are copies (only their managed
	// fields are dropped, in place).
	if job := list[0].(*batch.Job); len(job.Spec.Tasks) != 1 || job.ManagedFields != nil {
		t.Fatal("summarizing changed the listed object, or its managed fields were kept")
	}
	// A delete drops a summary too.
	if err := (jobsStore{j}).Delete(list[0]); err != nil {
		t.Fatal(err)
	}
	if j.Summaries() != 39 {
		t.Fatalf("after a delete: %d summaries, want 39", j.Summaries())
	}
	if full, summaries := j.Counts(); full != 0 || summaries != 39 {
		t.Fatalf("after a delete: %d full, %d summaries; want 0, 39", full, summaries)
	}
}

// With no slot count (a process that holds everything), every Job is kept in full.
func TestJobsWithoutARingKeepEverythingInFull(t *testing.T) {
	filled := make(chan []int, 1)
	j := newJobs(nil, nil, hclog.NewNullLogger(), func(slots []int) { filled <- slots })
	if err := (jobsStore{j}).Update(fullJob("a")); err != nil {
		t.Fatal(err)
	}
	if job, ok, err := j.Get("ns/a"); err != nil || !ok || len(job.Spec.Tasks) != 1 {
		t.Fatalf("got %v %v %v, want the Job in full", job, ok, err)
	}
	// A gained slot has nothing to fill and is ready at once (no list, no slot count needed).
	j.gain(context.Background(), []int{3})
	select {
	case got := <-filled:
		if len(got) != 1 || got[0] != 3 {
			t.Fatalf("filled %v, want [3]", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a gained slot was never reported filled")
	}
}

// A gained slot's Jobs are filled in full from their packed copies, with no
// list (the Jobs have no client here), exactly as they were stored.
func TestJobsGainFillsFromPacks(t *testing.T) {
	const slots = 8
	filled := make(chan []int, 1)
	j := newJobs(nil, func() int { return slots }, hclog.NewNullLogger(), func(s []int) { filled <- s })
	var updated int
	j.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ any) { updated++ }})
	var list []any
	want := map[string]*batch.Job{}
	for i := range 40 {
		job := fullJob(fmt.Sprintf("j%02d", i))
		list = append(list, job)
		if key := "ns/" + job.Name; shard.SlotOf(key, slots) < 4 {
			want[key] = job // stored with its managed fields dropped, in place
		}
	}
	if err := (jobsStore{j}).Replace(list, "1"); err != nil {
		t.Fatal(err)
	}
	if n := j.packDue(time.Now(), true); n != 40 {
		t.Fatalf("%d Jobs packed, want 40", n)
	}
	if j.Summaries() != 40 || j.PackedBytes() == 0 {
		t.Fatalf("%d summaries, %d packed bytes; want 40 summaries, packed", j.Summaries(), j.PackedBytes())
	}
	held := []int{0, 1, 2, 3}
	j.hold(held)
	j.gain(context.Background(), held)
	select {
	case <-filled:
	case <-time.After(10 * time.Second):
		t.Fatal("the gained slots were never filled")
	}
	for key, orig := range want {
		job, ok, err := j.Get(key)
		if err != nil || !ok {
			t.Fatalf("%s after the gain: %v %v", key, ok, err)
		}
		if !apiequality.Semantic.DeepEqual(job, orig) {
			t.Fatalf("%s unpacked as %+v, want %+v", key, job, orig)
		}
	}
	if updated != len(want) || j.Summaries() != 40-len(want) {
		t.Fatalf("%d updates told, %d summaries; want %d, %d", updated, j.Summaries(), len(want), 40-len(want))
	}
	// Losing the slots packs their Jobs again; the room comes back to what it was.
	before := j.PackedBytes()
	j.lose(held)
	j.packDue(time.Now(), true)
	if j.Summaries() != 40 || j.PackedBytes() <= before {
		t.Fatalf("after the loss: %d summaries, %d packed bytes (were %d)", j.Summaries(), j.PackedBytes(), before)
	}
	for _, obj := range list {
		if err := (jobsStore{j}).Delete(obj); err != nil {
			t.Fatal(err)
		}
	}
	if j.PackedBytes() != 0 || j.Summaries() != 0 {
		t.Fatalf("after every delete: %d packed bytes, %d summaries; want none", j.PackedBytes(), j.Summaries())
	}
}

// A summary whose Job could not be packed is filled from a list of the Jobs,
// which also tells of Jobs deleted unseen.
func TestJobsFillListsWhatWasNotPacked(t *testing.T) {
	const slots = 8
	var mine []*batch.Job
	for i := 0; len(mine) < 2; i++ {
		if job := fullJob(fmt.Sprintf("j%02d", i)); shard.SlotOf("ns/"+job.Name, slots) == 0 {
			mine = append(mine, job)
		}
	}
	newer := mine[0].DeepCopy()
	newer.ResourceVersion, newer.Status.Running = "9", 5
	filled := make(chan []int, 1)
	j := newJobs(vcfake.NewSimpleClientset(newer), func() int { return slots }, hclog.NewNullLogger(), func(s []int) { filled <- s })
	if err := (jobsStore{j}).Replace([]any{mine[0], mine[1]}, "1"); err != nil {
		t.Fatal(err)
	}
	j.mu.Lock()
	for _, job := range mine {
		j.setSummaryLocked("ns/"+job.Name, nil, false) // as if packing had failed
	}
	j.mu.Unlock()
	j.hold([]int{0})
	j.gain(context.Background(), []int{0})
	select {
	case <-filled:
	case <-time.After(10 * time.Second):
		t.Fatal("the gained slot was never filled")
	}
	if job, ok, err := j.Get("ns/" + newer.Name); err != nil || !ok || job.Status.Running != 5 {
		t.Fatalf("the Job not packed: %v %v %v, want the listed one", job, ok, err)
	}
	if _, ok, _ := j.GetIndexer().GetByKey("ns/" + mine[1].Name); ok {
		t.Fatal("a Job the list no longer has is still cached")
	}
}

// A summary's Job is packed once it has gone the delay without a change, not
// on each change; until then a gain takes it whole, as it came, and a change
// or a delete drops the whole Job waiting. Past maxUnpacked, Jobs are packed
// at once.
func TestJobsPackOnceQuiet(t *testing.T) {
	const slots = 8
	filled := make(chan []int, 1)
	j := newJobs(nil, func() int { return slots }, hclog.NewNullLogger(), func(s []int) { filled <- s })
	var list []any
	var mine []*batch.Job
	for i := range 40 {
		job := fullJob(fmt.Sprintf("j%02d", i))
		list = append(list, job)
		if shard.SlotOf("ns/"+job.Name, slots) < 4 {
			mine = append(mine, job)
		}
	}
	start := time.Now()
	if err := (jobsStore{j}).Replace(list, "1"); err != nil {
		t.Fatal(err)
	}
	if j.Summaries() != 40 || j.PackedBytes() != 0 {
		t.Fatalf("%d summaries, %d packed bytes; want 40 summaries, none packed yet", j.Summaries(), j.PackedBytes())
	}
	if n := j.packDue(start.Add(j.packDelay/2), false); n != 0 {
		t.Fatalf("%d Jobs packed before the delay, want none", n)
	}
	// A change restarts a Job's wait; a delete drops it.
	changed := list[0].(*batch.Job).DeepCopy()
	changed.ResourceVersion = "8"
	if err := (jobsStore{j}).Update(changed); err != nil {
		t.Fatal(err)
	}
	if err := (jobsStore{j}).Delete(list[1]); err != nil {
		t.Fatal(err)
	}
	// The clock, pinned: every Job stored at t0, the changed one a delay later.
	t0 := time.Now()
	j.mu.Lock()
	for key, u := range j.unpacked {
		u.at = t0
		if key == "ns/"+changed.Name {
			u.at = t0.Add(j.packDelay)
		}
		j.unpacked[key] = u
	}
	j.mu.Unlock()
	if n := j.packDue(t0.Add(j.packDelay), false); n != 38 {
		t.Fatalf("%d Jobs packed after the delay, want 38 (not the changed one, not the deleted one)", n)
	}
	if j.PackedBytes() == 0 || len(j.unpacked) != 1 {
		t.Fatalf("%d packed bytes, %d unpacked; want some, 1", j.PackedBytes(), len(j.unpacked))
	}
	// A gain takes the Job still waiting as it came, and the others unpacked.
	j.hold([]int{0, 1, 2, 3})
	j.gain(context.Background(), []int{0, 1, 2, 3})
	select {
	case <-filled:
	case <-time.After(10 * time.Second):
		t.Fatal("the gained slots were never filled")
	}
	for _, orig := range mine {
		key := "ns/" + orig.Name
		if key == "ns/"+list[1].(*batch.Job).Name {
			continue
		}
		want := orig
		if orig.Name == changed.Name {
			want = changed
		}
		if job, ok, err := j.Get(key); err != nil || !ok || !apiequality.Semantic.DeepEqual(job, want) {
			t.Fatalf("%s after the gain: %v %v %v, want %+v", key, job, ok, err, want)
		}
	}
	j.mu.Lock()
	for key := range j.unpacked {
		if shard.SlotOf(key, slots) < 4 {
			t.Errorf("%s of a gained slot is still waiting to be packed", key)
		}
	}
	j.mu.Unlock()
	j.packDue(time.Now().Add(time.Hour), false)
	if len(j.unpacked) != 0 {
		t.Fatalf("%d still unpacked, want none", len(j.unpacked))
	}
	// Past maxUnpacked Jobs waiting, the next is packed at once.
	j2 := newJobs(nil, func() int { return slots }, hclog.NewNullLogger(), nil)
	var many []any
	for i := 0; len(many) < maxUnpacked+1; i++ {
		many = append(many, fullJob(fmt.Sprintf("m%05d", i)))
	}
	if err := (jobsStore{j2}).Replace(many, "1"); err != nil {
		t.Fatal(err)
	}
	if len(j2.unpacked) != maxUnpacked || j2.PackedBytes() == 0 {
		t.Fatalf("%d unpacked, %d packed bytes; want %d unpacked and one packed", len(j2.unpacked), j2.PackedBytes(), maxUnpacked)
	}
}

// BenchmarkJobsSummaryUpdates is what a replica spends on the Jobs of slots
// it does not hold: a Job's first seconds, as the steady load of
// BenchmarkScale makes them (created, then 5 status writes), stored as a
// summary each time, its Job packed on every version (at-once) or once it
// has gone quiet (on-quiet, ringfire's default). It reports the CPU per Job.
func BenchmarkJobsSummaryUpdates(b *testing.B) {
	const slots, versions = 8, 6
	template := fullJob("template")
	template.Spec.Tasks = []batch.TaskSpec{{Name: "worker", Replicas: 2, Template: corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "steady"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/busybox:1.36",
			Command: []string{"sleep", "1"}, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}}},
	}}}
	template.Spec.Policies = []batch.LifecyclePolicy{{Event: "PodEvicted", Action: "RestartJob"}}
	for _, mode := range []struct {
		name  string
		delay time.Duration
	}{{"at-once", 0}, {"on-quiet", packDelay}} {
		b.Run(mode.name, func(b *testing.B) {
			j := newJobs(nil, func() int { return slots }, hclog.NewNullLogger(), nil)
			j.packDelay = mode.delay
			store := jobsStore{j}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				name := fmt.Sprintf("steady-%d", n)
				n++
				for v := range versions {
					job := template.DeepCopy()
					job.Name, job.UID, job.ResourceVersion = name, k8stypes.UID("uid-"+name), fmt.Sprint(v)
					job.Status.Running = int32(v)
					if err := store.Update(job); err != nil {
						b.Fatal(err)
					}
				}
				if n%64 == 0 {
					j.packDue(time.Now().Add(time.Hour), false) // the packing loop's ticks
				}
			}
			j.packDue(time.Now().Add(time.Hour), false)
		})
	}
}
