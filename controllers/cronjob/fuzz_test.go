package cronjob

import (
	"errors"
	"strings"
	"testing"
	"time"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// FuzzParseSchedule: whatever spec.schedule and spec.timeZone hold (Volcano's CRD lets any
// string through), parsing never panics, a refusal is a scheduleError of a known reason that
// names the field to fix, and a schedule that parses gives times that move forward, with the
// unmet ones counted within tooManyMissed+1.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{
		"* * * * *", "*/15 * * * *", "@hourly", "@every 90s", "@every 1m", "0 3 * * *", "61 * * * *",
		"", "every day at noon", "* * * * * *", "0 0 30 2 *",
		"TZ=UTC", "CRON_TZ=UTC", "TZ=", "TZ=UTC ", "TZ=UTC\t* * * * *", "TZ=Local * * * * *",
		"CRON_TZ=Asia/Tokyo 0 9 * * *", "TZ=America/New_York @daily", "TZ=../../etc/passwd * * * * *",
		"TZ=UTC TZ=UTC * * * * *", "@every -1m", "@every 99999999999h", "1-60/0 * * * *", "*/0 * * * *",
	} {
		f.Add(s, "", false)
	}
	for _, tz := range []string{"UTC", "Europe/Paris", "", "Local", "Mars/Olympus", "/etc/localtime", "../x"} {
		f.Add("0 9 * * *", tz, true)
	}
	now := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, schedule, tz string, hasTZ bool) {
		spec := batch.CronJobSpec{Schedule: schedule}
		if hasTZ {
			spec.TimeZone = &tz
		}
		s, _, err := ParseSchedule(spec)
		if err != nil {
			var se *scheduleError
			if !errors.As(err, &se) {
				t.Fatalf("%q tz %q: error %T %v, want a scheduleError", schedule, tz, err, err)
			}
			switch se.reason {
			case "UnparseableSchedule", "UnknownTimeZone", "InvalidSchedule":
			default:
				t.Fatalf("%q tz %q: reason %q", schedule, tz, se.reason)
			}
			if !strings.Contains(se.msg, "spec.") {
				t.Fatalf("%q tz %q: message %q names no field", schedule, tz, se.msg)
			}
			return
		}
		if s.Schedule == nil || s.Location == nil {
			t.Fatalf("%q tz %q: parsed with no schedule or zone", schedule, tz)
		}
		if next := s.Next(now); !next.IsZero() && !next.After(now) {
			t.Fatalf("%q tz %q: next after %v is %v", schedule, tz, now, next)
		}
		if wait, ok := untilNext(s, now); ok && wait <= 0 {
			t.Fatalf("%q tz %q: wait %v", schedule, tz, wait)
		}
		u, err := UnmetTimes(s, now.Add(-72*time.Hour), now)
		if err == nil && (u.Missed < 0 || u.Missed > tooManyMissed+1 || u.Latest.After(now) || (u.Missed > 0) == u.Latest.IsZero()) {
			t.Fatalf("%q tz %q: unmet %+v", schedule, tz, u)
		}
	})
}

// FuzzScheduledTime: whatever a Job controlled by the CronJob carries in its name and its
// scheduled-timestamp annotation (a user may write both), reading its scheduled time never
// panics, and a time read comes from a well-formed annotation or from the minute after the
// CronJob's name in the Job's.
func FuzzScheduledTime(f *testing.F) {
	for _, seed := range [][3]string{
		{"nightly", "nightly-29000000", ""}, {"nightly", "nightly-x", ""}, {"nightly", "other-1", ""},
		{"nightly", "nightly-9223372036854775807", ""}, {"nightly", "nightly--5", ""},
		{"nightly", "x", "2026-01-15T10:00:00+01:00"}, {"nightly", "x", "9999-12-31T23:59:59Z"}, {"nightly", "x", "garbage"},
		{"", "-1", ""}, {"a-", "a--1", ""},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, cronJob, name, annotation string) {
		job := &batch.Job{}
		job.Name, job.Annotations = name, map[string]string{batch.CronJobScheduledTimestampAnnotation: annotation}
		at, ok := ScheduledTime(cronJob, job)
		if !ok {
			return
		}
		if _, err := time.Parse(time.RFC3339, annotation); err != nil && !strings.HasPrefix(name, cronJob+"-") {
			t.Fatalf("ScheduledTime(%q, %q, %q) = %v from neither the annotation nor the name", cronJob, name, annotation, at)
		}
	})
}
