package cronjob

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

func at(t *testing.T, rfc3339 string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, rfc3339)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustParse(t *testing.T, schedule string, tz *string) Schedule {
	t.Helper()
	s, _, err := ParseSchedule(batch.CronJobSpec{Schedule: schedule, TimeZone: tz})
	if err != nil {
		t.Fatalf("parse %q: %v", schedule, err)
	}
	return s
}

func TestParseSchedule(t *testing.T) {
	from := at(t, "2026-01-15T10:17:00Z")
	for _, tc := range []struct {
		schedule string
		tz       *string
		next     string // the first time after from, RFC 3339 in UTC; "" when refused
		prefix   bool
		reason   string
	}{
		{schedule: "* * * * *", next: "2026-01-15T10:18:00Z"},
		{schedule: "*/15 * * * *", next: "2026-01-15T10:30:00Z"},
		{schedule: "@hourly", next: "2026-01-15T11:00:00Z"},
		{schedule: "@daily", next: "2026-01-16T00:00:00Z"},
		{schedule: "@every 90s", next: "2026-01-15T10:18:30Z"},
		// No timeZone is UTC, whatever the process' zone.
		{schedule: "0 3 * * *", next: "2026-01-16T03:00:00Z"},
		{schedule: "0 3 * * *", tz: ptr.To("Europe/Paris"), next: "2026-01-16T02:00:00Z"},
		{schedule: "0 9 * * *", tz: ptr.To("Asia/Tokyo"), next: "2026-01-16T00:00:00Z"},
		// A zone in the schedule wins over spec.timeZone, as in Kubernetes.
		{schedule: "CRON_TZ=Asia/Tokyo 0 9 * * *", tz: ptr.To("Europe/Paris"), next: "2026-01-16T00:00:00Z", prefix: true},
		{schedule: "TZ=America/New_York 0 9 * * *", next: "2026-01-15T14:00:00Z", prefix: true},
		{schedule: "61 * * * *", reason: "UnparseableSchedule"},
		{schedule: "every day at noon", reason: "UnparseableSchedule"},
		{schedule: "* * * * * *", reason: "UnparseableSchedule"},
		{schedule: "", reason: "UnparseableSchedule"},
		{schedule: "TZ=Mars/Olympus * * * * *", reason: "UnparseableSchedule", prefix: true},
		{schedule: "* * * * *", tz: ptr.To("Mars/Olympus"), reason: "UnknownTimeZone"},
		{schedule: "* * * * *", tz: ptr.To(""), reason: "UnknownTimeZone"},
		{schedule: "* * * * *", tz: ptr.To("Local"), reason: "UnknownTimeZone"},
		// Volcano's CRD lets these through; the cron library panics on a prefix with no space.
		{schedule: "TZ=UTC", reason: "UnparseableSchedule", prefix: true},
		{schedule: "CRON_TZ=UTC", reason: "UnparseableSchedule", prefix: true},
		{schedule: "TZ=", reason: "UnparseableSchedule", prefix: true},
		{schedule: "TZ=UTC   ", reason: "UnparseableSchedule", prefix: true},
		{schedule: "TZ=UTC\t* * * * *", reason: "UnparseableSchedule", prefix: true},
		{schedule: "TZ=Local * * * * *", reason: "UnknownTimeZone", prefix: true},
		{schedule: "* * * * * TZ=UTC", reason: "UnparseableSchedule"},
		{schedule: strings.Repeat("* ", maxScheduleBytes), reason: "UnparseableSchedule"},
		{schedule: "* * * * *", tz: ptr.To(strings.Repeat("A", maxTimeZoneBytes+1)), reason: "UnknownTimeZone"},
		// Job names hold the minute: more than one time a minute cannot be started.
		{schedule: "@every 30s", reason: "InvalidSchedule"},
		{schedule: "@every 1m", next: "2026-01-15T10:18:00Z"},
	} {
		s, prefix, err := ParseSchedule(batch.CronJobSpec{Schedule: tc.schedule, TimeZone: tc.tz})
		if prefix != tc.prefix {
			t.Errorf("%q: tzPrefix %v, want %v", tc.schedule, prefix, tc.prefix)
		}
		if tc.reason != "" {
			var se *scheduleError
			if !errors.As(err, &se) || se.reason != tc.reason {
				t.Errorf("%q tz %v: error %v, want reason %s", tc.schedule, ptr.Deref(tc.tz, "<nil>"), err, tc.reason)
			} else if !strings.Contains(se.msg, "spec.") {
				t.Errorf("%q: message %q does not say which field to fix", tc.schedule, se.msg)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.schedule, err)
			continue
		}
		if got := s.Next(from).UTC().Format(time.RFC3339); got != tc.next {
			t.Errorf("%q tz %v: next after %s is %s, want %s", tc.schedule, ptr.Deref(tc.tz, "<nil>"), from.Format(time.RFC3339), got, tc.next)
		}
	}
}

func TestUnmetTimes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		schedule   string
		since, now string
		latest     string // "" for none
		missed     int
		tooMany    bool
	}{
		{name: "not due yet", schedule: "0 * * * *", since: "2026-01-15T10:00:00Z", now: "2026-01-15T10:59:59Z"},
		{name: "due on the second", schedule: "0 * * * *", since: "2026-01-15T10:00:00Z", now: "2026-01-15T11:00:00Z",
			latest: "2026-01-15T11:00:00Z", missed: 1},
		{name: "three missed, the latest starts", schedule: "0 * * * *", since: "2026-01-15T10:00:00Z", now: "2026-01-15T13:30:00Z",
			latest: "2026-01-15T13:00:00Z", missed: 3},
		{name: "exactly 100", schedule: "* * * * *", since: "2026-01-15T10:00:00Z", now: "2026-01-15T11:40:30Z",
			latest: "2026-01-15T11:40:00Z", missed: 100},
		{name: "101 is too many", schedule: "* * * * *", since: "2026-01-15T10:00:00Z", now: "2026-01-15T11:41:30Z",
			latest: "2026-01-15T11:41:00Z", missed: 101, tooMany: true},
		{name: "a year of minutes", schedule: "* * * * *", since: "2025-01-15T10:00:00Z", now: "2026-01-15T10:00:59Z",
			latest: "2026-01-15T10:00:00Z", missed: 101, tooMany: true},
		// Weekdays 6:30, 10:30, 14:30: a Saturday after weeks of misses still finds Friday 14:30,
		// where stepping back by the first interval (4h) would find nothing.
		{name: "irregular, over a weekend", schedule: "30 6-16/4 * * 1-5", since: "2025-12-01T00:00:00Z", now: "2026-01-17T12:00:00Z",
			latest: "2026-01-16T14:30:00Z", missed: 101, tooMany: true},
		{name: "every 90s", schedule: "@every 90s", since: "2026-01-15T10:00:00Z", now: "2026-01-15T10:05:00Z",
			latest: "2026-01-15T10:04:30Z", missed: 3},
		{name: "clock behind the last schedule time", schedule: "* * * * *", since: "2026-01-15T10:05:00Z", now: "2026-01-15T10:00:00Z"},
	} {
		s := mustParse(t, tc.schedule, nil)
		got, err := UnmetTimes(s, at(t, tc.since), at(t, tc.now))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		latest := ""
		if !got.Latest.IsZero() {
			latest = got.Latest.UTC().Format(time.RFC3339)
		}
		if latest != tc.latest || got.Missed != tc.missed || got.TooMany() != tc.tooMany {
			t.Errorf("%s: latest %q missed %d tooMany %v; want %q, %d, %v", tc.name, latest, got.Missed, got.TooMany(), tc.latest, tc.missed, tc.tooMany)
		}
	}
}

func TestUnmetTimesOfAScheduleThatNeverRuns(t *testing.T) {
	s := mustParse(t, "59 23 31 2 *", nil) // February 31
	_, err := UnmetTimes(s, at(t, "2026-01-01T00:00:00Z"), at(t, "2026-06-01T00:00:00Z"))
	if !errors.Is(err, errNeverRuns) {
		t.Fatalf("err %v, want errNeverRuns", err)
	}
	if _, ok := untilNext(s, at(t, "2026-06-01T00:00:00Z")); ok {
		t.Error("untilNext found a next time for February 31")
	}
}

// The schedule library's daylight-saving rules, which ringfire inherits from it as Kubernetes
// does: a time in the hour skipped in spring does not run that day, and a time in the hour
// repeated in autumn runs twice, as two Jobs of different names.
func TestScheduleAcrossDaylightSaving(t *testing.T) {
	ny := ptr.To("America/New_York")
	for _, tc := range []struct {
		name     string
		schedule string
		from     string
		want     []string
	}{
		{"spring forward skips 2:30", "30 2 * * *", "2026-03-07T12:00:00Z",
			[]string{"2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"}},
		{"spring forward, 3:30 runs", "30 3 * * *", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:30:00Z", "2026-03-09T07:30:00Z"}},
		{"fall back runs 1:30 twice", "30 1 * * *", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z"}},
		{"hourly stays hourly in UTC", "0 * * * *", "2026-11-01T04:30:00Z",
			[]string{"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"}},
	} {
		s := mustParse(t, tc.schedule, ny)
		next := at(t, tc.from)
		var got, names []string
		for range tc.want {
			next = s.Next(next)
			got = append(got, next.UTC().Format(time.RFC3339))
			names = append(names, JobName("nightly", next))
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		for i := 1; i < len(names); i++ {
			if names[i] == names[i-1] {
				t.Errorf("%s: two runs share the Job name %s", tc.name, names[i])
			}
		}
	}
}

func TestStartingDeadline(t *testing.T) {
	scheduled := at(t, "2026-01-15T10:00:00Z")
	for _, tc := range []struct {
		deadline *int64
		now      string
		late     bool
	}{
		{nil, "2026-01-20T10:00:00Z", false},
		{ptr.To[int64](30), "2026-01-15T10:00:30Z", false},
		{ptr.To[int64](30), "2026-01-15T10:00:31Z", true},
		{ptr.To[int64](0), "2026-01-15T10:00:00Z", false},
		{ptr.To[int64](0), "2026-01-15T10:00:01Z", true},
	} {
		spec := batch.CronJobSpec{StartingDeadlineSeconds: tc.deadline}
		if got := startingDeadlinePassed(spec, scheduled, at(t, tc.now)); got != tc.late {
			t.Errorf("deadline %v at %s: late %v, want %v", ptr.Deref(tc.deadline, -1), tc.now, got, tc.late)
		}
	}
}

func TestJobFor(t *testing.T) {
	cj := &batch.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly", UID: "cj-uid"},
		Spec: batch.CronJobSpec{JobTemplate: batch.JobTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}},
			Spec:       batch.JobSpec{Queue: "q", Tasks: []batch.TaskSpec{{Name: "t", Replicas: 2}}},
		}},
	}
	scheduled := at(t, "2026-01-15T10:00:00Z")
	paris, _ := time.LoadLocation("Europe/Paris")
	job := JobFor(cj, scheduled, paris)
	if want := "nightly-29474520"; job.Name != want || job.Namespace != "ns" {
		t.Errorf("name %s/%s, want ns/%s", job.Namespace, job.Name, want)
	}
	if got := job.Annotations[batch.CronJobScheduledTimestampAnnotation]; got != "2026-01-15T11:00:00+01:00" {
		t.Errorf("scheduled-timestamp annotation %q", got)
	}
	if job.Labels["team"] != "a" || job.Annotations["note"] != "x" {
		t.Errorf("template metadata not copied: %v %v", job.Labels, job.Annotations)
	}
	ref := metav1.GetControllerOf(job)
	if ref == nil || ref.UID != "cj-uid" || ref.Kind != "CronJob" || ref.APIVersion != "batch.volcano.sh/v1alpha1" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("controller reference %+v", ref)
	}
	if name, uid, ok := ownerOf(job); !ok || name != "nightly" || uid != "cj-uid" {
		t.Errorf("ownerOf: %s %s %v", name, uid, ok)
	}
	job.Spec.Tasks[0].Replicas = 9
	job.Labels["team"] = "b"
	job.Annotations["note"] = "y"
	if cj.Spec.JobTemplate.Spec.Tasks[0].Replicas != 2 || cj.Spec.JobTemplate.Labels["team"] != "a" || cj.Spec.JobTemplate.Annotations["note"] != "x" {
		t.Error("the Job shares memory with the CronJob's template")
	}
}

func TestBeyondHistory(t *testing.T) {
	mk := func(name string, minute int) *batch.Job {
		return &batch.Job{ObjectMeta: metav1.ObjectMeta{Name: name,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 15, 10, minute, 0, 0, time.UTC))}}
	}
	jobs := []*batch.Job{mk("d", 4), mk("a", 1), mk("c", 3), mk("b2", 2), mk("b1", 2)}
	names := func(js []*batch.Job) string {
		var out []string
		for _, j := range js {
			out = append(out, j.Name)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		limit int32
		want  string
	}{{5, ""}, {9, ""}, {3, "a,b1"}, {1, "a,b1,b2,c"}, {0, "a,b1,b2,c,d"}} {
		if got := names(beyondHistory(jobs, tc.limit)); got != tc.want {
			t.Errorf("limit %d: delete %q, want %q", tc.limit, got, tc.want)
		}
	}
}
