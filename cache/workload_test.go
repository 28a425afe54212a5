package cache

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/shard"
)

// workloadCache is a cache of a ring of slots slots holding held, with the
// Queues "default" and "gpu"; nothing runs.
func workloadCache(t testing.TB, slots int, held []int) *Cache {
	t.Helper()
	c := New(Config{Kube: kubefake.NewClientset(), Volcano: vcfake.NewSimpleClientset(), Slots: func() int { return slots }})
	c.jobs.hold(held)
	for _, q := range []string{"default", "gpu"} {
		if err := c.Queues().Informer().GetIndexer().Add(&scheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: q}}); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func workloadJob(name, queue string, phase batch.JobPhase, since time.Time) *batch.Job {
	return &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(since.Add(-time.Hour))},
		Spec:       batch.JobSpec{Queue: queue},
		Status:     batch.JobStatus{State: batch.JobState{Phase: phase, LastTransitionTime: metav1.NewTime(since)}},
	}
}

// keyIn returns a name in ns whose key's slot is (or, with in false, is
// not) among held, starting the search at prefix-0.
func keyIn(t *testing.T, prefix string, slots int, held map[int]bool, in bool, skip *int) string {
	t.Helper()
	for ; *skip < 10000; *skip++ {
		name := fmt.Sprintf("%s-%d", prefix, *skip)
		if held[shard.SlotOf("ns/"+name, slots)] == in {
			*skip++
			return name
		}
	}
	t.Fatal("no such name")
	return ""
}

// The Jobs and PodGroups of held slots are counted by phase and queue, an
// unknown phase as Unknown, a missing queue as "", no queue as "default";
// those of other slots are not counted; the age of each passing phase is
// that of its oldest Job.
func TestWorkloadMetricsCountHeldSlotsByPhaseAndQueue(t *testing.T) {
	const slots = 4
	c := workloadCache(t, slots, []int{0, 1})
	held := map[int]bool{0: true, 1: true}
	now := time.Now()
	n := 0
	mine := func() string { return keyIn(t, "j", slots, held, true, &n) }
	other := func() string { return keyIn(t, "j", slots, held, false, &n) }
	var list []any
	add := func(j *batch.Job) { list = append(list, j) }
	add(workloadJob(mine(), "", batch.Running, now.Add(-10*time.Minute)))
	add(workloadJob(mine(), "default", batch.Running, now.Add(-20*time.Minute)))
	add(workloadJob(mine(), "gpu", batch.Pending, now.Add(-5*time.Minute)))
	unreconciled := workloadJob(mine(), "gpu", "", now) // not reconciled yet: Pending since its creation
	unreconciled.Status.State.LastTransitionTime = metav1.Time{}
	add(unreconciled)
	add(workloadJob(mine(), "nowhere", batch.Completed, now))               // a missing queue
	add(workloadJob(mine(), "gpu", "Exploded", now))                        // not a phase
	add(workloadJob(other(), "gpu", batch.Running, now.Add(-48*time.Hour))) // another replica's
	if err := (jobsStore{c.jobs}).Replace(list, "1"); err != nil {
		t.Fatal(err)
	}
	pgs := c.QueuePodGroups().GetStore()
	for _, pg := range []struct {
		name, queue string
		phase       scheduling.PodGroupPhase
	}{
		{mine(), "gpu", scheduling.PodGroupInqueue},
		{mine(), "gpu", scheduling.PodGroupInqueue},
		{mine(), "", ""},
		{mine(), "nowhere", scheduling.PodGroupRunning},
		{other(), "gpu", scheduling.PodGroupRunning},
	} {
		if err := pgs.Add(&scheduling.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: pg.name},
			Spec:       scheduling.PodGroupSpec{Queue: pg.queue}, Status: scheduling.PodGroupStatus{Phase: pg.phase},
		}); err != nil {
			t.Fatal(err)
		}
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(c.WorkloadCollector())
	want := `
# HELP ringfire_jobs Volcano Jobs of the slots this replica holds, by status.state.phase and spec.queue (queue="" when it names no existing Queue).
# TYPE ringfire_jobs gauge
ringfire_jobs{phase="Completed",queue=""} 1
ringfire_jobs{phase="Pending",queue="gpu"} 2
ringfire_jobs{phase="Running",queue="default"} 2
ringfire_jobs{phase="Unknown",queue="gpu"} 1
# HELP ringfire_podgroups PodGroups of the slots this replica holds (the slot of their namespace/name), by status.phase and spec.queue (queue="" when it names no existing Queue).
# TYPE ringfire_podgroups gauge
ringfire_podgroups{phase="Inqueue",queue="gpu"} 2
ringfire_podgroups{phase="Pending",queue="default"} 1
ringfire_podgroups{phase="Running",queue=""} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ringfire_jobs", "ringfire_podgroups"); err != nil {
		t.Error(err)
	}

	ages := map[string]float64{}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "ringfire_jobs_phase_age_seconds" {
			for _, m := range f.GetMetric() {
				ages[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	if len(ages) != 6 {
		t.Errorf("ages of %d phases (%v), want the 6 passing phases", len(ages), ages)
	}
	// The oldest Running Job entered it 20 minutes ago (the other replica's
	// is older, and not this replica's to report); the Pending one whose
	// phase was never written counts from its creation, an hour ago.
	for phase, want := range map[string]time.Duration{"Running": 20 * time.Minute, "Pending": time.Hour, "Restarting": 0} {
		if got := ages[phase]; got < want.Seconds() || got > want.Seconds()+60 {
			t.Errorf("age of %s: %vs, want %v", phase, got, want)
		}
	}

	// Losing a slot takes its Jobs out of the count.
	c.jobs.lose([]int{0, 1})
	if n, err := testutil.GatherAndCount(reg, "ringfire_jobs", "ringfire_podgroups"); err != nil || n != 0 {
		t.Errorf("after losing every slot: %d series (%v), want none", n, err)
	}
}

// BenchmarkWorkloadScrape times a scrape of the workload metrics of a
// replica holding a third of a ring of 1,024 slots, with 10,000 Jobs and
// 10,000 PodGroups in the cluster, in 20 queues.
func BenchmarkWorkloadScrape(b *testing.B) {
	const slots, jobs = 1024, 10_000
	var held []int
	for s := range slots / 3 {
		held = append(held, s)
	}
	c := workloadCache(b, slots, held)
	for q := range 20 {
		if err := c.Queues().Informer().GetIndexer().Add(&scheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("q%d", q)}}); err != nil {
			b.Fatal(err)
		}
	}
	phases := []batch.JobPhase{batch.Pending, batch.Running, batch.Completed, batch.Failed}
	var list []any
	now := time.Now()
	for i := range jobs {
		list = append(list, workloadJob(fmt.Sprintf("job-%d", i), fmt.Sprintf("q%d", i%20), phases[i%len(phases)], now))
		pg := &scheduling.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("job-%d-uid", i)},
			Spec:       scheduling.PodGroupSpec{Queue: fmt.Sprintf("q%d", i%20)},
			Status:     scheduling.PodGroupStatus{Phase: scheduling.PodGroupRunning},
		}
		if err := c.QueuePodGroups().GetStore().Add(pg); err != nil {
			b.Fatal(err)
		}
	}
	if err := (jobsStore{c.jobs}).Replace(list, "1"); err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c.WorkloadCollector())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
