package cronjob

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/shard"
)

// TestMain turns off client-go's streaming lists: Volcano's generated fake clientset does not
// send the bookmark that ends the initial events, so an informer over it would never sync.
func TestMain(m *testing.M) {
	os.Setenv("KUBE_FEATURE_WatchListClient", "false")
	os.Exit(m.Run())
}

// fixture is a controller over fake clients whose informers are filled by hand, and a fake
// clock: sync runs as a plain function, one step at a time.
type fixture struct {
	t      *testing.T
	c      *Controller
	vc     *vcfake.Clientset
	clock  *clocktesting.FakePassiveClock
	events *record.FakeRecorder
	valid  error // what Config.Valid returns
	rv     int
}

const ns = "ns"

func newFixture(t *testing.T, now time.Time) *fixture {
	t.Helper()
	f := &fixture{t: t, vc: vcfake.NewSimpleClientset(), clock: clocktesting.NewFakePassiveClock(now)}
	cfg := DefaultConfig()
	cfg.Kube, cfg.Volcano, cfg.Ownership = kubefake.NewSimpleClientset(), f.vc, shard.HoldAll{S: 64}
	cfg.Valid, cfg.Clock = func() error { return f.valid }, f.clock
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.events = record.NewFakeRecorder(1000)
	c.Recorder = f.events
	f.c = c
	return f
}

func (f *fixture) nextRV() string {
	f.rv++
	return fmt.Sprint(f.rv)
}

// add puts objects in the API server and in the informers.
func (f *fixture) add(objs ...runtime.Object) {
	f.t.Helper()
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *batch.CronJob:
			o.ResourceVersion = f.nextRV()
			_, err = f.vc.BatchV1alpha1().CronJobs(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
			if err == nil {
				err = f.c.cronInf.GetIndexer().Add(o)
			}
		case *batch.Job:
			o.ResourceVersion = f.nextRV()
			_, err = f.vc.BatchV1alpha1().Jobs(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
			if err == nil {
				err = f.c.jobInf.GetIndexer().Add(o)
			}
		}
		if err != nil {
			f.t.Fatal(err)
		}
	}
	f.vc.ClearActions()
}

// catchUp gives the informers what the API server holds now, as a relist would.
func (f *fixture) catchUp() {
	f.t.Helper()
	ctx := context.Background()
	cjs, err := f.vc.BatchV1alpha1().CronJobs("").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	jobs, err := f.vc.BatchV1alpha1().Jobs("").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var cjObjs, jobObjs []any
	for i := range cjs.Items {
		cjs.Items[i].ResourceVersion = f.nextRV()
		cjObjs = append(cjObjs, &cjs.Items[i])
	}
	for i := range jobs.Items {
		jobObjs = append(jobObjs, &jobs.Items[i])
	}
	if err := f.c.cronInf.GetIndexer().Replace(cjObjs, ""); err != nil {
		f.t.Fatal(err)
	}
	if err := f.c.jobInf.GetIndexer().Replace(jobObjs, ""); err != nil {
		f.t.Fatal(err)
	}
	f.vc.ClearActions()
}

// sync runs one reconcile of the CronJob ns/name at the clock's time.
func (f *fixture) sync(name string) (time.Duration, error) {
	return f.c.sync(context.Background(), ns+"/"+name)
}

func (f *fixture) mustSync(name string) time.Duration {
	f.t.Helper()
	wait, err := f.sync(name)
	if err != nil {
		f.t.Fatalf("sync %s: %v", name, err)
	}
	return wait
}

// writes returns the fake API server's write actions since the last check, as "verb resource
// name", and forgets them.
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.vc.Actions() {
		switch a.GetVerb() {
		case "create":
			out = append(out, "create "+a.GetResource().Resource+" "+a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName())
		case "update":
			out = append(out, "update "+a.GetResource().Resource+"/"+a.GetSubresource()+" "+a.(k8stesting.UpdateAction).GetObject().(metav1.Object).GetName())
		case "delete":
			out = append(out, "delete "+a.GetResource().Resource+" "+a.(k8stesting.DeleteAction).GetName())
		}
	}
	f.vc.ClearActions()
	return out
}

// eventsSeen returns the events recorded since the last check, as "Type Reason message".
func (f *fixture) eventsSeen() []string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (f *fixture) cronJob(name string) *batch.CronJob {
	f.t.Helper()
	cj, err := f.vc.BatchV1alpha1().CronJobs(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return cj
}

func (f *fixture) job(name string) (*batch.Job, bool) {
	job, err := f.vc.BatchV1alpha1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
	return job, err == nil
}

func newCronJob(name, schedule string, created time.Time) *batch.CronJob {
	return &batch.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(created)},
		Spec: batch.CronJobSpec{
			Schedule: schedule, ConcurrencyPolicy: batch.AllowConcurrent,
			SuccessfulJobsHistoryLimit: ptr.To[int32](3), FailedJobsHistoryLimit: ptr.To[int32](1),
			JobTemplate: batch.JobTemplateSpec{Spec: batch.JobSpec{Queue: "default", Tasks: []batch.TaskSpec{{Name: "t", Replicas: 1}}}},
		},
	}
}

// ownedJob is a Job of cj for the scheduled time, in phase.
func ownedJob(cj *batch.CronJob, scheduled time.Time, phase batch.JobPhase, finishedAt time.Time) *batch.Job {
	job := JobFor(cj, scheduled, time.UTC)
	job.UID = types.UID("uid-" + job.Name)
	job.CreationTimestamp = metav1.NewTime(scheduled)
	job.Status.State = batch.JobState{Phase: phase, LastTransitionTime: metav1.NewTime(finishedAt)}
	return job
}

func activeNames(cj *batch.CronJob) []string {
	var out []string
	for _, r := range cj.Status.Active {
		out = append(out, r.Name)
	}
	return out
}

func has(list []string, substr string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.Contains(s, substr) })
}

var t0 = time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC)

func TestSyncCreatesTheJobOfTheLatestTime(t *testing.T) {
	f := newFixture(t, t0.Add(3*time.Minute+20*time.Second))
	f.add(newCronJob("every", "* * * * *", t0.Add(-30*time.Second)))
	readRV := f.c.cronInf.GetIndexer().List()[0].(*batch.CronJob).ResourceVersion

	wait := f.mustSync("every")
	// 10:00 to 10:03 are due; only 10:03 starts.
	want := JobName("every", t0.Add(3*time.Minute))
	if got := f.writes(); !slices.Equal(got, []string{"create jobs " + want, "update cronjobs/status every"}) {
		t.Fatalf("writes %v", got)
	}
	if wait != 40*time.Second+nextScheduleMargin {
		t.Errorf("wait %v, want 40.1s (to 10:04 and a margin)", wait)
	}
	cj := f.cronJob("every")
	if got := activeNames(cj); !slices.Equal(got, []string{want}) {
		t.Errorf("active %v, want [%s]", got, want)
	}
	if cj.Status.LastScheduleTime == nil || !cj.Status.LastScheduleTime.Equal(&metav1.Time{Time: t0.Add(3 * time.Minute)}) {
		t.Errorf("lastScheduleTime %v", cj.Status.LastScheduleTime)
	}
	if cj.ResourceVersion != readRV {
		t.Errorf("status written over resourceVersion %q, read %q", cj.ResourceVersion, readRV)
	}
	job, _ := f.job(want)
	if job.Annotations[batch.CronJobScheduledTimestampAnnotation] != "2026-01-15T10:03:00Z" {
		t.Errorf("annotations %v", job.Annotations)
	}
	if ev := f.eventsSeen(); !has(ev, "Normal SuccessfulCreate Created job "+want) {
		t.Errorf("events %v", ev)
	}

	// The Job's add event comes before the informer has the new status: the reconcile reads
	// the status it wrote, and does nothing.
	_ = f.c.jobInf.GetIndexer().Add(job)
	f.mustSync("every")
	if got := f.writes(); len(got) != 0 {
		t.Errorf("second sync wrote %v", got)
	}
	if ev := f.eventsSeen(); len(ev) != 0 {
		t.Errorf("second sync recorded %v", ev)
	}

	// Nothing more is due until 10:04.
	f.catchUp()
	f.clock.SetTime(t0.Add(3*time.Minute + 59*time.Second))
	if wait := f.mustSync("every"); wait != time.Second+nextScheduleMargin {
		t.Errorf("wait %v at 10:03:59", wait)
	}
	if got := f.writes(); len(got) != 0 {
		t.Errorf("wrote %v before 10:04", got)
	}
	f.clock.SetTime(t0.Add(4 * time.Minute))
	f.mustSync("every")
	if got := f.writes(); !slices.Equal(got, []string{"create jobs " + JobName("every", t0.Add(4*time.Minute)), "update cronjobs/status every"}) {
		t.Errorf("at 10:04 wrote %v", got)
	}
}

func TestSyncTooManyMissed(t *testing.T) {
	f := newFixture(t, t0.Add(200*time.Minute+5*time.Second))
	f.add(newCronJob("many", "* * * * *", t0.Add(-time.Second)))
	f.mustSync("many")
	if got := f.writes(); !slices.Equal(got, []string{"create jobs " + JobName("many", t0.Add(200*time.Minute)), "update cronjobs/status many"}) {
		t.Errorf("writes %v", got)
	}
	if ev := f.eventsSeen(); !has(ev, "Warning TooManyMissedTimes") || !has(ev, "startingDeadlineSeconds") {
		t.Errorf("events %v", ev)
	}
}

func TestSyncStartingDeadline(t *testing.T) {
	f := newFixture(t, t0.Add(time.Minute+45*time.Second))
	cj := newCronJob("late", "* * * * *", t0.Add(-time.Second))
	cj.Status.LastScheduleTime = &metav1.Time{Time: t0}
	cj.Spec.StartingDeadlineSeconds = ptr.To[int64](30)
	f.add(cj)
	// 10:01 was due 45s ago, more than the 30s allowed.
	wait := f.mustSync("late")
	if got := f.writes(); len(got) != 0 {
		t.Errorf("wrote %v", got)
	}
	if wait != 15*time.Second+nextScheduleMargin {
		t.Errorf("wait %v", wait)
	}
	if ev := f.eventsSeen(); !has(ev, "Warning MissSchedule Missed scheduled time to start a job: Thu, 15 Jan 2026 10:01:00 +0000") {
		t.Errorf("events %v", ev)
	}
	// Within the deadline it starts.
	f.clock.SetTime(t0.Add(2*time.Minute + 20*time.Second))
	f.mustSync("late")
	if got := f.writes(); !has(got, "create jobs "+JobName("late", t0.Add(2*time.Minute))) {
		t.Errorf("writes %v", got)
	}
}

func TestSyncConcurrencyPolicies(t *testing.T) {
	now := t0.Add(2*time.Minute + time.Second)
	prev := t0.Add(time.Minute)
	for _, tc := range []struct {
		policy    batch.ConcurrencyPolicy
		prevPhase batch.JobPhase
		writes    []string
		active    []string
		event     string
	}{
		{batch.AllowConcurrent, batch.Running,
			[]string{"create jobs p-29474522", "update cronjobs/status p"}, []string{"p-29474521", "p-29474522"}, "SuccessfulCreate"},
		{batch.ForbidConcurrent, batch.Running,
			nil, []string{"p-29474521"}, "Normal JobAlreadyActive"},
		// Aborted can be resumed: it still counts as running.
		{batch.ForbidConcurrent, batch.Aborted,
			nil, []string{"p-29474521"}, "Normal JobAlreadyActive"},
		{batch.ForbidConcurrent, batch.Completed,
			[]string{"create jobs p-29474522", "update cronjobs/status p"}, []string{"p-29474522"}, "Normal SawCompletedJob"},
		{batch.ReplaceConcurrent, batch.Running,
			[]string{"delete jobs p-29474521", "create jobs p-29474522", "update cronjobs/status p"}, []string{"p-29474522"}, "Normal SuccessfulDelete"},
	} {
		t.Run(string(tc.policy)+"/"+string(tc.prevPhase), func(t *testing.T) {
			f := newFixture(t, now)
			cj := newCronJob("p", "* * * * *", t0.Add(-time.Second))
			cj.Spec.ConcurrencyPolicy = tc.policy
			job := ownedJob(cj, prev, tc.prevPhase, prev.Add(10*time.Second))
			cj.Status.LastScheduleTime = &metav1.Time{Time: prev}
			cj.Status.Active = []corev1.ObjectReference{refOf(job)}
			f.add(cj, job)
			f.mustSync("p")
			if got := f.writes(); !slices.Equal(got, tc.writes) {
				t.Errorf("writes %v, want %v", got, tc.writes)
			}
			if got := activeNames(f.cronJob("p")); !slices.Equal(got, tc.active) {
				t.Errorf("active %v, want %v", got, tc.active)
			}
			if ev := f.eventsSeen(); !has(ev, tc.event) {
				t.Errorf("events %v, want %s", ev, tc.event)
			}
		})
	}
}

func TestSyncReplaceDeletesWithPreconditions(t *testing.T) {
	f := newFixture(t, t0.Add(2*time.Minute+time.Second))
	cj := newCronJob("r", "* * * * *", t0.Add(-time.Second))
	cj.Spec.ConcurrencyPolicy = batch.ReplaceConcurrent
	job := ownedJob(cj, t0.Add(time.Minute), batch.Running, time.Time{})
	cj.Status.Active = []corev1.ObjectReference{refOf(job)}
	cj.Status.LastScheduleTime = &metav1.Time{Time: t0.Add(time.Minute)}
	f.add(cj, job)
	f.mustSync("r")
	checkDeletes(t, f, map[string]types.UID{job.Name: job.UID})
}

// checkDeletes checks that the Jobs deleted were exactly want, each with its UID as a
// precondition and in the background.
func checkDeletes(t *testing.T, f *fixture, want map[string]types.UID) {
	t.Helper()
	got := map[string]types.UID{}
	for _, a := range f.vc.Actions() {
		d, ok := a.(k8stesting.DeleteActionImpl)
		if !ok {
			continue
		}
		o := d.DeleteOptions
		if o.Preconditions == nil || o.Preconditions.UID == nil || o.PropagationPolicy == nil || *o.PropagationPolicy != metav1.DeletePropagationBackground {
			t.Errorf("delete %s: options %+v; want a UID precondition and Background", d.Name, o)
			continue
		}
		got[d.Name] = *o.Preconditions.UID
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("deleted %v, want %v", got, want)
	}
}

func TestSyncSuspended(t *testing.T) {
	f := newFixture(t, t0.Add(5*time.Minute))
	cj := newCronJob("s", "* * * * *", t0)
	cj.Spec.Suspend = ptr.To(true)
	f.add(cj)
	if wait := f.mustSync("s"); wait != 0 {
		t.Errorf("a suspended CronJob asks to be woken in %v", wait)
	}
	if got := f.writes(); len(got) != 0 {
		t.Errorf("wrote %v", got)
	}
}

func TestSyncHistoryAndLastSuccessfulTime(t *testing.T) {
	f := newFixture(t, t0.Add(10*time.Minute+30*time.Second))
	cj := newCronJob("h", "* * * * *", t0.Add(-time.Second))
	cj.Status.LastScheduleTime = &metav1.Time{Time: t0.Add(10 * time.Minute)}
	var jobs []runtime.Object
	phases := []batch.JobPhase{batch.Completed, batch.Failed, batch.Completed, batch.Terminated, batch.Completed,
		batch.Completed, batch.Failed, batch.Completed, batch.Running, batch.Aborted}
	byName := map[string]*batch.Job{}
	for i, phase := range phases {
		job := ownedJob(cj, t0.Add(time.Duration(i+1)*time.Minute), phase, t0.Add(time.Duration(i+1)*time.Minute+20*time.Second))
		jobs = append(jobs, job)
		byName[job.Name] = job
		if phase == batch.Running || phase == batch.Aborted {
			cj.Status.Active = append(cj.Status.Active, refOf(job))
		}
	}
	// A Job of another CronJob of the same name, and one that no CronJob owns, are no history.
	other := ownedJob(newCronJob("h", "* * * * *", t0), t0, batch.Completed, t0)
	other.Name, other.UID, other.OwnerReferences[0].UID = "other", "uid-other", "uid-old-h"
	loose := ownedJob(cj, t0, batch.Completed, t0)
	loose.Name, loose.UID, loose.OwnerReferences = "loose", "uid-loose", nil
	f.add(append(jobs, cj, other, loose)...)

	f.mustSync("h")
	// Completed at 1, 3, 5, 6, 8 (keep 3: 5, 6, 8); failed at 2, 4 (Terminated), 7 (keep 1: 7).
	want := map[string]types.UID{}
	for _, i := range []int{1, 3, 2, 4} {
		name := JobName("h", t0.Add(time.Duration(i)*time.Minute))
		want[name] = byName[name].UID
	}
	checkDeletes(t, f, want)
	st := f.cronJob("h").Status
	if st.LastSuccessfulTime == nil || !st.LastSuccessfulTime.Equal(&metav1.Time{Time: t0.Add(8*time.Minute + 20*time.Second)}) {
		t.Errorf("lastSuccessfulTime %v, want 10:08:20", st.LastSuccessfulTime)
	}
	if got := activeNames(f.cronJob("h")); len(got) != 2 {
		t.Errorf("active %v: the Running and the Aborted Job stay", got)
	}

	// A history limit of 0 keeps none.
	f.catchUp()
	cj = f.cronJob("h")
	cj.Spec.SuccessfulJobsHistoryLimit, cj.Spec.FailedJobsHistoryLimit = ptr.To[int32](0), ptr.To[int32](0)
	cj.ResourceVersion = f.nextRV()
	_ = f.c.cronInf.GetIndexer().Update(cj)
	f.mustSync("h")
	if got := f.writes(); len(got) != 4 {
		t.Errorf("limit 0 deleted %v, want the 4 finished Jobs left", got)
	}
}

func TestSyncRepairsTheActiveList(t *testing.T) {
	f := newFixture(t, t0.Add(2*time.Minute+10*time.Second))
	cj := newCronJob("a", "* * * * *", t0.Add(-time.Second))
	cj.Spec.ConcurrencyPolicy = batch.ForbidConcurrent
	cj.Status.LastScheduleTime = &metav1.Time{Time: t0.Add(2 * time.Minute)}
	gone := ownedJob(cj, t0, batch.Running, time.Time{})
	lagging := ownedJob(cj, t0.Add(time.Minute), batch.Running, time.Time{})
	reused := ownedJob(cj, t0.Add(2*time.Minute), batch.Running, time.Time{})
	adopted := ownedJob(cj, t0.Add(2*time.Minute), batch.Pending, time.Time{})
	adopted.Name, adopted.UID = "a-made-before-a-failed-status-write", "uid-adopted"
	cj.Status.Active = []corev1.ObjectReference{refOf(gone), refOf(lagging), refOf(reused)}
	f.add(cj, adopted)
	// lagging is in the API server but not yet in the informer; reused has the name of an
	// active Job but another UID; gone is nowhere.
	for _, j := range []*batch.Job{lagging, reused} {
		j = j.DeepCopy()
		if j == reused {
			j.UID = "uid-new"
		}
		if _, err := f.vc.BatchV1alpha1().Jobs(ns).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	reusedNow, _ := f.job(reused.Name)
	reusedNow.UID = "uid-new"
	_, _ = f.vc.BatchV1alpha1().Jobs(ns).Update(context.Background(), reusedNow, metav1.UpdateOptions{})
	f.vc.ClearActions()

	f.mustSync("a")
	got := activeNames(f.cronJob("a"))
	if !slices.Equal(got, []string{lagging.Name, adopted.Name}) {
		t.Errorf("active %v, want [%s %s]", got, lagging.Name, adopted.Name)
	}
	ev := f.eventsSeen()
	if !has(ev, "Normal MissingJob Active job went missing: "+gone.Name) || !has(ev, "UnexpectedJob Job "+adopted.Name) {
		t.Errorf("events %v", ev)
	}
}

func TestSyncBadScheduleOrTimeZone(t *testing.T) {
	for _, tc := range []struct {
		schedule string
		tz       *string
		event    string
	}{
		{"61 * * * *", nil, "Warning UnparseableSchedule unparseable schedule \"61 * * * *\""},
		{"@fortnightly", nil, "Warning UnparseableSchedule"},
		{"* * * * *", ptr.To("Europe/Atlantis"), "Warning UnknownTimeZone unknown time zone \"Europe/Atlantis\" in spec.timeZone: set it to an IANA time zone name"},
		{"59 23 31 2 *", nil, "Warning InvalidSchedule invalid schedule \"59 23 31 2 *\""},
	} {
		f := newFixture(t, t0.Add(5*time.Minute))
		cj := newCronJob("bad", tc.schedule, t0)
		cj.Spec.TimeZone = tc.tz
		f.add(cj)
		wait, err := f.sync("bad")
		if err != nil || wait != 0 {
			t.Errorf("%q: wait %v err %v; want no requeue and no error (it needs a change first)", tc.schedule, wait, err)
		}
		if got := f.writes(); len(got) != 0 {
			t.Errorf("%q: wrote %v", tc.schedule, got)
		}
		if ev := f.eventsSeen(); !has(ev, tc.event) {
			t.Errorf("%q: events %v, want %s", tc.schedule, ev, tc.event)
		}
	}
}

func TestSyncTZPrefixWarns(t *testing.T) {
	f := newFixture(t, t0.Add(time.Minute+time.Second))
	f.add(newCronJob("tz", "CRON_TZ=Asia/Tokyo * * * * *", t0.Add(-time.Second)))
	f.mustSync("tz")
	if got := f.writes(); !has(got, "create jobs") {
		t.Errorf("writes %v", got)
	}
	if ev := f.eventsSeen(); !has(ev, "Warning UnsupportedSchedule") {
		t.Errorf("events %v", ev)
	}
}

func TestSyncAlreadyExistsIsSuccess(t *testing.T) {
	f := newFixture(t, t0.Add(time.Minute+time.Second))
	cj := newCronJob("x", "* * * * *", t0.Add(-time.Second))
	// An earlier owner of the slot made the Job and stopped before writing the status; the
	// informer of this replica has not seen the Job yet.
	made := ownedJob(cj, t0.Add(time.Minute), batch.Pending, time.Time{})
	f.add(cj)
	if _, err := f.vc.BatchV1alpha1().Jobs(ns).Create(context.Background(), made, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.vc.ClearActions()
	if _, err := f.sync("x"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if got := activeNames(f.cronJob("x")); !slices.Equal(got, []string{made.Name}) {
		t.Errorf("active %v", got)
	}
	if ev := f.eventsSeen(); has(ev, "SuccessfulCreate") {
		t.Errorf("a Job made by someone else is reported created: %v", ev)
	}

	// A Job of that name that the CronJob does not control is left alone, with a warning.
	f2 := newFixture(t, t0.Add(time.Minute+time.Second))
	cj2 := newCronJob("x", "* * * * *", t0.Add(-time.Second))
	foreign := ownedJob(cj2, t0.Add(time.Minute), batch.Running, time.Time{})
	foreign.OwnerReferences = nil
	f2.add(cj2)
	if _, err := f2.vc.BatchV1alpha1().Jobs(ns).Create(context.Background(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f2.sync("x"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if got := activeNames(f2.cronJob("x")); len(got) != 0 {
		t.Errorf("active %v: a foreign Job was taken in", got)
	}
	if ev := f2.eventsSeen(); !has(ev, "Warning ForeignJob") {
		t.Errorf("events %v", ev)
	}
}

func TestSyncRejectedTemplate(t *testing.T) {
	f := newFixture(t, t0.Add(time.Minute+time.Second))
	f.add(newCronJob("rej", "* * * * *", t0.Add(-time.Second)))
	refuse := apierrors.NewInvalid(schema.GroupKind{Group: "batch.volcano.sh", Kind: "Job"}, "rej-29474521", nil)
	refuse.ErrStatus.Message = "Job.batch.volcano.sh \"rej-29474521\" is invalid: spec: a Job needs at least one task in spec.tasks"
	f.vc.PrependReactor("create", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, refuse })
	_, err := f.sync("rej")
	if err == nil {
		t.Fatal("a refused create is reported as success")
	}
	if ev := f.eventsSeen(); !has(ev, "Warning FailedCreate Error creating job rej-29474521: Job.batch.volcano.sh \"rej-29474521\" is invalid: spec: a Job needs at least one task") {
		t.Errorf("events %v", ev)
	}
	if got := f.writes(); slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "update") }) {
		t.Errorf("status written after a failed create: %v", got)
	}
}

func TestSyncWritesNothingWithoutOwnership(t *testing.T) {
	now := t0.Add(2*time.Minute + time.Second)
	setup := func(t *testing.T) *fixture {
		f := newFixture(t, now)
		cj := newCronJob("o", "* * * * *", t0.Add(-time.Second))
		cj.Spec.ConcurrencyPolicy = batch.ReplaceConcurrent
		cj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](0)
		done := ownedJob(cj, t0, batch.Completed, t0.Add(10*time.Second))
		running := ownedJob(cj, t0.Add(time.Minute), batch.Running, time.Time{})
		cj.Status.Active = []corev1.ObjectReference{refOf(running)}
		f.add(cj, done, running)
		return f
	}
	t.Run("slot lost", func(t *testing.T) {
		f := setup(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := f.c.sync(ctx, ns+"/o")
		if !errors.Is(err, shard.ErrNotOwner) {
			t.Errorf("err %v, want ErrNotOwner", err)
		}
		if got := f.writes(); len(got) != 0 {
			t.Errorf("wrote %v", got)
		}
	})
	t.Run("fence deadline passed", func(t *testing.T) {
		f := setup(t)
		f.valid = errors.New("lease may have expired")
		_, err := f.sync("o")
		if !errors.Is(err, shard.ErrNotOwner) {
			t.Errorf("err %v, want ErrNotOwner", err)
		}
		if got := f.writes(); len(got) != 0 {
			t.Errorf("wrote %v", got)
		}
	})
}

// Every schedule time a Forbid CronJob holds back is counted once as forbid, and once as
// superseded when a later time takes its place, however often the CronJob is looked at.
func TestSyncCountsMissedTimesOnce(t *testing.T) {
	f := newFixture(t, t0.Add(2*time.Minute+time.Second))
	cj := newCronJob("m", "* * * * *", t0.Add(-time.Second))
	cj.Spec.ConcurrencyPolicy = batch.ForbidConcurrent
	cj.Status.LastScheduleTime = &metav1.Time{Time: t0}
	running := ownedJob(cj, t0, batch.Running, time.Time{})
	cj.Status.Active = []corev1.ObjectReference{refOf(running)}
	f.add(cj, running)
	for _, now := range []time.Duration{2*time.Minute + time.Second, 2*time.Minute + 30*time.Second, 3*time.Minute + time.Second, 3*time.Minute + 2*time.Second} {
		f.clock.SetTime(t0.Add(now))
		f.mustSync("m")
	}
	missed := func(reason string) float64 {
		var m dto.Metric
		if err := f.c.metrics.missed.WithLabelValues(reason).Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetCounter().GetValue()
	}
	// 10:02 and 10:03 were held back; 10:01 and 10:02 were passed over by a later time.
	if got := missed(missedForbid); got != 2 {
		t.Errorf("forbid %v, want 2", got)
	}
	if got := missed(missedSuperseded); got != 2 {
		t.Errorf("superseded %v, want 2", got)
	}
	if got := f.writes(); len(got) != 0 {
		t.Errorf("wrote %v", got)
	}
}

// A Job made for a time the status does not show yet (its maker lost the slot, or its status
// write failed) is that time's run: the time is recorded, the Job is not deleted as history
// until the API server has the time, and the time is never run a second time.
func TestSyncNeverRunsATimeTwice(t *testing.T) {
	f := newFixture(t, t0.Add(time.Minute+30*time.Second))
	cj := newCronJob("h0", "* * * * *", t0.Add(-time.Second))
	cj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](0)
	cj.Status.LastScheduleTime = &metav1.Time{Time: t0}
	done := ownedJob(cj, t0.Add(time.Minute), batch.Completed, t0.Add(time.Minute+20*time.Second))
	f.add(cj, done)

	// The Job kept is left for another pass, and the error says so: the dispatcher retries
	// soon, not at the next schedule time.
	if _, err := f.sync("h0"); err == nil || !strings.Contains(err.Error(), "not recorded as lastScheduleTime yet") {
		t.Fatalf("first sync: error %v, want the history Job left for another pass", err)
	}
	got := f.writes()
	if !slices.Equal(got, []string{"update cronjobs/status h0"}) {
		t.Fatalf("first sync wrote %v, want only the status (the 10:01 Job kept until the status has 10:01)", got)
	}
	if st := f.cronJob("h0").Status; st.LastScheduleTime == nil || !st.LastScheduleTime.Equal(&metav1.Time{Time: t0.Add(time.Minute)}) {
		t.Fatalf("lastScheduleTime %v, want 10:01 from the existing Job", st.LastScheduleTime)
	}
	f.catchUp()
	f.mustSync("h0")
	if got := f.writes(); !slices.Equal(got, []string{"delete jobs " + done.Name}) {
		t.Fatalf("second sync wrote %v, want the history delete only", got)
	}
	f.catchUp()
	f.mustSync("h0")
	if got := f.writes(); len(got) != 0 {
		t.Fatalf("third sync wrote %v, want nothing: 10:01 has run", got)
	}
}

// A history delete the API server refuses does not hold scheduling back: the Job of the
// time is still made, and the refusal is reported.
func TestSyncHistoryDeleteFailureDoesNotBlockScheduling(t *testing.T) {
	f := newFixture(t, t0.Add(2*time.Minute+30*time.Second))
	cj := newCronJob("hf", "* * * * *", t0.Add(-time.Second))
	cj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](0)
	cj.Status.LastScheduleTime = &metav1.Time{Time: t0.Add(time.Minute)}
	old := ownedJob(cj, t0.Add(time.Minute), batch.Completed, t0.Add(time.Minute+20*time.Second))
	f.add(cj, old)
	f.vc.PrependReactor("delete", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "batch.volcano.sh", Resource: "jobs"}, old.Name, errors.New("denied by policy"))
	})
	if _, err := f.sync("hf"); err == nil || !strings.Contains(err.Error(), "denied by policy") {
		t.Errorf("sync: error %v, want the refused delete, so that it is tried again soon", err)
	}
	if _, ok := f.job(JobName("hf", t0.Add(2*time.Minute))); !ok {
		t.Fatalf("the 10:02 Job was not made; writes %v", f.writes())
	}
	if ev := f.eventsSeen(); !has(ev, "FailedDelete") {
		t.Errorf("no FailedDelete event for the refused history delete; events %v", ev)
	}
}

// A history Job that changed since it was read (the delete's resourceVersion precondition
// fails) is not taken as deleted: the sync says it is left, so the CronJob is looked at again
// soon, on what the Job is now.
func TestSyncHistoryDeleteConflictIsRetried(t *testing.T) {
	f := newFixture(t, t0.Add(time.Minute+30*time.Second))
	cj := newCronJob("hc", "* * * * *", t0.Add(-time.Second))
	cj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](0)
	cj.Status.LastScheduleTime = &metav1.Time{Time: t0.Add(time.Minute)}
	old := ownedJob(cj, t0, batch.Completed, t0.Add(20*time.Second))
	f.add(cj, old)
	f.vc.PrependReactor("delete", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "batch.volcano.sh", Resource: "jobs"}, old.Name, errors.New("the object has been modified"))
	})
	if _, err := f.sync("hc"); err == nil || !strings.Contains(err.Error(), "changed since it was read") {
		t.Fatalf("sync: error %v, want the changed Job left for another pass", err)
	}
	if ev := f.eventsSeen(); has(ev, "SuccessfulDelete") {
		t.Errorf("a delete that did not happen was reported: %v", ev)
	}
}
