package cronjobtest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/e2e/stack"
)

// The CronJob behaviours, each on its own CronJob and namespace, side by side on one stack of
// three replicas: every schedule is per minute, so each test takes one to two minutes.
func TestCronJobs(t *testing.T) {
	s := stack.Start(t, stack.Options{Replicas: 3, StandIn: true})
	stack.RunParallel(t, s,
		stack.Case{Name: "every minute, status and history", Run: everyMinute},
		stack.Case{Name: "Forbid skips while one runs", Run: forbidSkips},
		stack.Case{Name: "handover keeps one Job per time", Run: handover},
		stack.Case{Name: "a Job of the name that is not its own is left alone", Run: foreignJob},
	)
}

// everyMinute: Jobs run to Completed on KWOK nodes, the status follows them (active while one
// runs, lastScheduleTime, lastSuccessfulTime), and a history limit of 1 deletes the older.
func everyMinute(t *testing.T, s *stack.Stack) {
	const ns, name = "cron-every", "every"
	cj := newCronJob(ns, name, "* * * * *", "5s")
	cj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](1)
	jobs := watchJobs(t, s, ns)
	create(t, s, cj)

	var sawActive []string
	stack.WaitFor(t, "two Jobs completed and the first deleted", 200*time.Second, func() (bool, string) {
		st := getCronJob(t, s, ns, name).Status
		for _, ref := range st.Active {
			if !slices.Contains(sawActive, ref.Name) {
				sawActive = append(sawActive, ref.Name)
			}
		}
		list := jobs.list()
		return len(list) >= 2 && list[0].deleted && list[1].phase == batch.Completed && st.LastSuccessfulTime != nil &&
			len(st.Active) == 0, jobs.String()
	})

	list := jobs.list()
	checkOnePerTime(t, name, list)
	first, second := list[0], list[1]
	if second.scheduled.Sub(first.scheduled) != time.Minute {
		t.Errorf("jobs scheduled at %s and %s: want a minute apart", first.scheduled, second.scheduled)
	}
	st := getCronJob(t, s, ns, name).Status
	if st.LastScheduleTime == nil || st.LastScheduleTime.Time.Before(second.scheduled) {
		t.Errorf("lastScheduleTime %v, want at least %s", st.LastScheduleTime, second.scheduled)
	}
	if !slices.Contains(sawActive, first.name) && !slices.Contains(sawActive, second.name) {
		t.Errorf("status.active never showed a running Job (saw %v)", sawActive)
	}
	if st.LastSuccessfulTime.Time.Before(second.scheduled) {
		t.Errorf("lastSuccessfulTime %s is before the second Job's scheduled time %s", st.LastSuccessfulTime, second.scheduled)
	}
	for _, reason := range []string{"SuccessfulCreate", "SawCompletedJob", "SuccessfulDelete"} {
		if len(s.Events(ns, name, reason)) == 0 {
			t.Errorf("no %s event on the CronJob", reason)
		}
	}
	oneCreatePerJob(t, s, ns, name, jobs)
	// The reconcile that follows a create reads the status it wrote, not the older cached one.
	if odd := append(s.Events(ns, name, "UnexpectedJob"), s.Events(ns, name, "MissingJob")...); len(odd) > 0 {
		t.Errorf("active-list repairs where none was needed: %v", odd)
	}
}

// forbidSkips: with Forbid, a Job still running at the next minute holds that minute's Job
// back, and with startingDeadlineSeconds it is not started late either.
func forbidSkips(t *testing.T, s *stack.Stack) {
	const ns, name = "cron-forbid", "forbid"
	cj := newCronJob(ns, name, "* * * * *", "100s")
	cj.Spec.ConcurrencyPolicy = batch.ForbidConcurrent
	cj.Spec.StartingDeadlineSeconds = ptr.To[int64](10)
	jobs := watchJobs(t, s, ns)
	create(t, s, cj)

	stack.WaitFor(t, "the first Job", 90*time.Second, func() (bool, string) { return len(jobs.list()) > 0, jobs.String() })
	first := jobs.list()[0]
	next := first.scheduled.Add(time.Minute)
	maxActive := 0
	for time.Now().Before(next.Add(20 * time.Second)) {
		maxActive = max(maxActive, len(getCronJob(t, s, ns, name).Status.Active))
		time.Sleep(250 * time.Millisecond)
	}
	if held := fmt.Sprintf("%s-%d", name, next.Unix()/60); len(jobs.list()) != 1 {
		t.Errorf("jobs %s; want only %s, with %s held back", jobs, first.name, held)
	}
	if maxActive != 1 {
		t.Errorf("status.active held up to %d Jobs; want 1", maxActive)
	}
	if len(s.Events(ns, name, "JobAlreadyActive")) == 0 {
		t.Errorf("no JobAlreadyActive event:\n%v", s.Events(ns, name, "SuccessfulCreate"))
	}
	checkOnePerTime(t, name, jobs.list())
}

// handover: the replica that holds the CronJob's slot stops just before a schedule time; the
// slot's next holder starts that time's Job, and no time gets two Jobs or none.
func handover(t *testing.T, s *stack.Stack) {
	const ns, name = "cron-handover", "handover"
	jobs := watchJobs(t, s, ns)
	create(t, s, newCronJob(ns, name, "* * * * *", "2s"))

	stack.WaitFor(t, "the first Job", 90*time.Second, func() (bool, string) { return len(jobs.list()) > 0, jobs.String() })
	first := jobs.list()[0]
	next := first.scheduled.Add(time.Minute)
	holder := s.SlotHolder(ns + "/" + name)
	sleepUntil(next.Add(-500 * time.Millisecond))
	stopped := time.Now()
	s.StopReplica(holder)
	var taker string
	stack.WaitFor(t, "another replica holds the slot", 30*time.Second, func() (bool, string) {
		taker = s.SlotHolder(ns + "/" + name)
		return taker != "" && taker != holder, taker
	})
	t.Logf("stopped %s, the holder of the CronJob's slot, %v before %s; %s held the slot %v later",
		holder, next.Sub(stopped).Round(time.Millisecond), next.Format("15:04:05"), taker, time.Since(stopped).Round(time.Millisecond))

	want := fmt.Sprintf("%s-%d", name, next.Unix()/60)
	stack.WaitFor(t, "the Job of the minute after the handover", 60*time.Second, func() (bool, string) {
		_, ok := jobs.get(want)
		return ok, jobs.String()
	})
	time.Sleep(10 * time.Second) // time for a second create, if one were coming
	list := jobs.list()
	checkOnePerTime(t, name, list)
	if len(list) != 2 || list[1].name != want {
		t.Errorf("jobs %s; want %s and %s", jobs, first.name, want)
	}
	oneCreatePerJob(t, s, ns, name, jobs)
}

// oneCreatePerJob checks that every Job seen was made by one create: one SuccessfulCreate
// event each. Events are posted asynchronously, and a Job of the next minute may just have
// come, so the two counts are compared until they agree, for up to 10 s.
func oneCreatePerJob(t *testing.T, s *stack.Stack, ns, name string, jobs *jobWatch) {
	t.Helper()
	var created []string
	var seen int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		created, seen = s.Events(ns, name, "SuccessfulCreate"), len(jobs.list())
		if len(created) == seen {
			return
		}
	}
	t.Errorf("%d SuccessfulCreate events for %d Jobs: %v", len(created), seen, created)
}
