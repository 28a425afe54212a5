package adversarytest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/e2e/vcjob"
	"github.com/ringfire/ringfire/e2e/volcano"
)

func init() {
	register(attack{name: "cronjob-schedule", run: attackCronJob})
}

// cronEditWait is how long a replica has to tell of an unparseable
// schedule in a Warning Event on the CronJob; the edit's damage, a panic on
// the informer's goroutine, would have ended every replica within it.
const cronEditWait = 30 * time.Second

// cronFuzzDir holds the crashers the fuzz targets of the CronJob
// controller's parsers found (Go's fuzz corpus, one directory per target).
const cronFuzzDir = "controllers/cronjob/testdata/fuzz"

// scheduleEdit is an edit of a CronJob's spec.schedule and, when zone is
// set, its spec.timeZone.
type scheduleEdit struct {
	schedule string
	zone     *string
	from     string // where the edit comes from
	// warned: a Warning Event must follow the edit where it is admitted.
	warned bool
}

// attackCronJob makes a CronJob that never fires during the suite, then
// edits its schedule, as its owner may, to "TZ=UTC" (a zone prefix with no
// schedule after it, on which the cron library slices past the text) and
// to each crasher of the controller's fuzz targets. Each edit is refused at
// admission, or admitted and told of in a Warning Event; no replica dies.
func attackCronJob(t *testing.T, w *world) {
	ns := w.namespace(t, "cron")
	cj := &batch.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns},
		Spec: batch.CronJobSpec{
			Schedule: "0 0 1 1 *",
			JobTemplate: batch.JobTemplateSpec{Spec: batch.JobSpec{
				SchedulerName: "volcano", Tasks: []batch.TaskSpec{vcjob.Task("worker", 1, "1s", "")},
			}},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := w.tenant.volcano.BatchV1alpha1().CronJobs(ns).Create(ctx, cj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CronJob %s: %v", cj.Name, err)
	}
	w.aim("cronjob-schedule", ns+"/"+cj.Name)
	edits := append([]scheduleEdit{{schedule: "TZ=UTC", from: "issue 49", warned: true}}, cronCrashers(t)...)
	refused, warned := 0, 0
	for _, e := range edits {
		since := time.Now().Add(-time.Second) // Events' times are whole seconds
		err := w.editSchedule(ns, cj.Name, e)
		switch {
		case apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err):
			refused++
			t.Logf("schedule %q (%s) refused at admission: %v", e.schedule, e.from, err)
			continue
		case err != nil:
			t.Fatalf("edit CronJob %s to schedule %q: %v", cj.Name, e.schedule, err)
		}
		ev, ok := w.warningSince(t, ns, "CronJob", cj.Name, since, e.schedule, cronEditWait)
		w.requireAlive(t, fmt.Sprintf("the CronJob's schedule was %q", e.schedule))
		switch {
		case ok:
			warned++
			t.Logf("schedule %q (%s) admitted and told of: %s: %s", e.schedule, e.from, ev.Reason, ev.Message)
		case e.warned:
			t.Errorf("schedule %q (%s) admitted, and no Warning Event on the CronJob names it within %v", e.schedule, e.from, cronEditWait)
		default:
			t.Logf("schedule %q (%s) admitted; no Warning Event names it (the controller may take it)", e.schedule, e.from)
		}
	}
	t.Logf("%d schedule edits: %d refused at admission, %d admitted and told of in a Warning Event", len(edits), refused, warned)
}

// editSchedule sets the CronJob's schedule (and zone) as its owner would,
// reading it again after a conflict.
func (w *world) editSchedule(ns, name string, e scheduleEdit) error {
	cronjobs := w.tenant.volcano.BatchV1alpha1().CronJobs(ns)
	var err error
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var cj *batch.CronJob
		if cj, err = cronjobs.Get(ctx, name, metav1.GetOptions{}); err == nil {
			cj.Spec.Schedule, cj.Spec.TimeZone = e.schedule, e.zone
			_, err = cronjobs.Update(ctx, cj, metav1.UpdateOptions{})
		}
		cancel()
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

// warningSince waits up to limit for a Warning Event on the object, no
// older than since, whose message holds text (as written, or quoted as Go
// quotes it).
func (w *world) warningSince(t *testing.T, ns, kind, name string, since time.Time, text string, limit time.Duration) (corev1.Event, bool) {
	t.Helper()
	quoted := strconv.Quote(text)
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		w.requireAlive(t, fmt.Sprintf("waiting for a Warning Event on %s %s/%s", kind, ns, name))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		list, err := w.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=" + kind + ",involvedObject.name=" + name,
		})
		cancel()
		if err == nil {
			for _, ev := range list.Items {
				last := ev.LastTimestamp.Time
				if ev.EventTime.After(last) {
					last = ev.EventTime.Time
				}
				if ev.Type == corev1.EventTypeWarning && !last.Before(since) &&
					(strings.Contains(ev.Message, quoted) || (text != "" && strings.Contains(ev.Message, text))) {
					return ev, true
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return corev1.Event{}, false
}

// cronCrashers reads the crashers the fuzz targets under cronFuzzDir keep,
// if there are any: the first string of each is a schedule, the second, if
// any, a time zone.
func cronCrashers(t *testing.T) []scheduleEdit {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(volcano.RepoRoot(t), cronFuzzDir, "*", "*"))
	var edits []scheduleEdit
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		values := corpusStrings(string(b))
		if len(values) == 0 {
			continue
		}
		e := scheduleEdit{schedule: values[0], from: filepath.Join(filepath.Base(filepath.Dir(f)), filepath.Base(f))}
		if len(values) > 1 && values[1] != "" {
			e.zone = &values[1]
		}
		edits = append(edits, e)
	}
	t.Logf("%d fuzz crashers under %s", len(edits), cronFuzzDir)
	return edits
}

// corpusStrings returns the string and []byte values of a file of Go's fuzz
// corpus ("go test fuzz v1", then one value a line, as Go writes it).
func corpusStrings(text string) []string {
	var out []string
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		for _, typ := range []string{"string(", "[]byte("} {
			if inner, ok := strings.CutPrefix(line, typ); ok && strings.HasSuffix(inner, ")") {
				if v, err := strconv.Unquote(strings.TrimSuffix(inner, ")")); err == nil {
					out = append(out, v)
				}
			}
		}
	}
	return out
}
