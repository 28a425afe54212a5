package cronjobtest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// TestMain lets the subtests run side by side even on a machine of two cores: they wait on the
// clock (minute boundaries), not on the CPU, and one that had to wait for a free turn would miss
// the minute it is meant to act at.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.parallel"); f != nil && f.Value.String() != "" {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n < 4 {
			_ = f.Value.Set("4")
		}
	}
	os.Exit(m.Run())
}

// newCronJob is a CronJob in ns whose Jobs run one pod for podDuration.
func newCronJob(ns, name, schedule, podDuration string) *batch.CronJob {
	return &batch.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batch.CronJobSpec{
			Schedule: schedule,
			JobTemplate: batch.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"cron": name}},
				Spec:       batch.JobSpec{SchedulerName: "volcano", Tasks: []batch.TaskSpec{vcjob.Task("main", 1, podDuration, "")}},
			},
		},
	}
}

// create makes the namespace and the CronJob.
func create(t *testing.T, s *stack.Stack, cj *batch.CronJob) *batch.CronJob {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cj.Namespace}}
	if _, err := s.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", cj.Namespace, err)
	}
	got, err := s.Volcano.BatchV1alpha1().CronJobs(cj.Namespace).Create(ctx, cj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create cronjob %s: %v", cj.Name, err)
	}
	t.Logf("created cronjob %s/%s at %s", cj.Namespace, cj.Name, time.Now().Format("15:04:05.000"))
	return got
}

func getCronJob(t *testing.T, s *stack.Stack, ns, name string) *batch.CronJob {
	t.Helper()
	cj, err := s.Volcano.BatchV1alpha1().CronJobs(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cj
}

// sleepUntil sleeps until at (at once if it has passed).
func sleepUntil(at time.Time) { time.Sleep(time.Until(at)) }

// seenJob is what the watch saw of one Job of the namespace.
type seenJob struct {
	name      string
	uids      []types.UID // every UID the name had: more than one is a Job made twice
	scheduled time.Time   // from the scheduled-timestamp annotation
	added     time.Time   // when the watch first saw it
	phase     batch.JobPhase
	deleted   bool
}

// jobWatch records every Job of a namespace as the API server reports it.
type jobWatch struct {
	mu   sync.Mutex
	jobs map[string]*seenJob
}

// watchJobs records the Jobs of ns until the test ends.
func watchJobs(t *testing.T, s *stack.Stack, ns string) *jobWatch {
	t.Helper()
	w := &jobWatch{jobs: map[string]*seenJob{}}
	s.WatchJobs(ns, func(typ watch.EventType, job *batch.Job) { w.see(t, typ, job) })
	return w
}

func (w *jobWatch) see(t *testing.T, typ watch.EventType, job *batch.Job) {
	w.mu.Lock()
	defer w.mu.Unlock()
	j := w.jobs[job.Name]
	if j == nil {
		j = &seenJob{name: job.Name, added: time.Now()}
		j.scheduled, _ = time.Parse(time.RFC3339, job.Annotations[batch.CronJobScheduledTimestampAnnotation])
		w.jobs[job.Name] = j
		t.Logf("job %s seen %v after its scheduled time %s", job.Name, j.added.Sub(j.scheduled).Round(time.Millisecond), j.scheduled.Format("15:04:05"))
	}
	if !slices.Contains(j.uids, job.UID) {
		j.uids = append(j.uids, job.UID)
	}
	j.phase = job.Status.State.Phase
	j.deleted = typ == watch.Deleted
}

// list returns copies of the Jobs seen, by scheduled time.
func (w *jobWatch) list() []seenJob {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]seenJob, 0, len(w.jobs))
	for _, j := range w.jobs {
		c := *j
		c.uids = slices.Clone(j.uids)
		out = append(out, c)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].scheduled.Before(out[b].scheduled) })
	return out
}

func (w *jobWatch) get(name string) (seenJob, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	j, ok := w.jobs[name]
	if !ok {
		return seenJob{}, false
	}
	c := *j
	c.uids = slices.Clone(j.uids)
	return c, true
}

func (w *jobWatch) String() string {
	var parts []string
	for _, j := range w.list() {
		parts = append(parts, fmt.Sprintf("%s(%s deleted=%v)", j.name, j.phase, j.deleted))
	}
	return strings.Join(parts, " ")
}

// checkOnePerTime fails the test unless every Job seen has the name of its scheduled time,
// one UID (never made twice), and a scheduled time of its own.
func checkOnePerTime(t *testing.T, cronJobName string, jobs []seenJob) {
	t.Helper()
	times := map[time.Time]string{}
	for _, j := range jobs {
		if want := fmt.Sprintf("%s-%d", cronJobName, j.scheduled.Unix()/60); j.name != want {
			t.Errorf("job %s: scheduled %s, so its name should be %s", j.name, j.scheduled, want)
		}
		if len(j.uids) != 1 {
			t.Errorf("job %s was made %d times (UIDs %v)", j.name, len(j.uids), j.uids)
		}
		if other, ok := times[j.scheduled]; ok {
			t.Errorf("jobs %s and %s share the scheduled time %s", other, j.name, j.scheduled)
		}
		times[j.scheduled] = j.name
	}
}
