package cronjob

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// tooManyMissed is how many unmet schedule times are still counted one by one; past it a
// CronJob gets a TooManyMissedTimes event (Kubernetes' bound, "more than 80 hourly runs of a
// long weekend, less than lots").
const tooManyMissed = 100

// nextScheduleMargin is added to the wake-up at the next schedule time, so that the reconcile
// runs just after it and not a hair before (Kubernetes pads its requeue the same way).
const nextScheduleMargin = 100 * time.Millisecond

// scheduleError is what is wrong with a CronJob's schedule or time zone, with the event reason
// that reports it. The CronJob is not looked at again until it changes.
type scheduleError struct {
	reason string
	msg    string
}

func (e *scheduleError) Error() string { return e.msg }

// Schedule is a CronJob's parsed schedule with the time zone its Jobs' scheduled-timestamp
// annotation is written in.
type Schedule struct {
	cron.Schedule
	Location *time.Location
}

// Bounds on the text ParseSchedule reads: a schedule of five fields or a descriptor is tens of
// bytes, an IANA zone name at most about 30. Past them the text is refused before any parser
// sees it, so no CronJob makes a replica parse a megabyte on every reconcile.
const (
	maxScheduleBytes = 1 << 10
	maxTimeZoneBytes = 255
)

// scheduleHelp is what every UnparseableSchedule message ends with: the forms spec.schedule takes.
const scheduleHelp = "spec.schedule takes five fields (minute hour day-of-month month day-of-week, e.g. \"*/5 * * * *\") or a descriptor (@yearly, @monthly, @weekly, @daily, @hourly, @every 10m)"

// ParseSchedule parses spec.schedule in spec.timeZone. Without a timeZone the schedule is in
// UTC, not in the process' local zone as in Kubernetes: replicas may run in different zones,
// and a CronJob whose slot moves must keep its times. A "TZ=" or "CRON_TZ=" prefix in the
// schedule is honoured, as Kubernetes' controller honours it for CronJobs that predate its
// validation (which now refuses the prefix, as ringfire's CRD does); spec.timeZone is then
// ignored and tzPrefix is true so the caller can warn.
//
// It never panics, whatever the text: Volcano's CRD lets any string through, and the cron
// library panics on a prefix with no space after the zone ("TZ=UTC"). Such a prefix, a zone
// of "Local" (each replica's own), and a text or zone past its bound are refused with a
// scheduleError that says what to fix, before the library sees them; a panic of the library
// on anything else is recovered into an UnparseableSchedule error.
func ParseSchedule(spec batch.CronJobSpec) (s Schedule, tzPrefix bool, err error) {
	s.Location = time.UTC
	if spec.TimeZone != nil {
		tz := *spec.TimeZone
		if len(tz) > maxTimeZoneBytes {
			return s, false, &scheduleError{reason: "UnknownTimeZone", msg: fmt.Sprintf(
				"spec.timeZone is %d bytes, longer than any time zone name (%d at most): set it to an IANA time zone name such as \"Europe/Paris\" or \"UTC\", or remove it for UTC",
				len(tz), maxTimeZoneBytes)}
		}
		loc, err := time.LoadLocation(tz)
		if err != nil || tz == "" || strings.EqualFold(tz, "Local") {
			return s, false, &scheduleError{reason: "UnknownTimeZone", msg: fmt.Sprintf(
				"unknown time zone %q in spec.timeZone: set it to an IANA time zone name such as \"Europe/Paris\" or \"UTC\", or remove it for UTC",
				tz)}
		}
		s.Location = loc
	}
	text := spec.Schedule
	if len(text) > maxScheduleBytes {
		return s, false, &scheduleError{reason: "UnparseableSchedule", msg: fmt.Sprintf(
			"spec.schedule is %d bytes, longer than the %d a schedule may be; %s", len(text), maxScheduleBytes, scheduleHelp)}
	}
	// Only a prefix is a zone: "TZ" anywhere else is a field the parser refuses.
	tzPrefix = strings.HasPrefix(text, "TZ=") || strings.HasPrefix(text, "CRON_TZ=")
	if tzPrefix {
		if err := checkZonePrefix(text); err != nil {
			return s, true, err
		}
	} else {
		text = "TZ=" + s.Location.String() + " " + text
	}
	s.Schedule, err = parseStandard(text)
	if err != nil {
		return s, tzPrefix, &scheduleError{reason: "UnparseableSchedule", msg: fmt.Sprintf(
			"unparseable schedule %q: %v; %s", spec.Schedule, err, scheduleHelp)}
	}
	// A Job's name holds the minute of its time, so two times within a minute would be one
	// Job, and the second silently skipped.
	if every, ok := s.Schedule.(cron.ConstantDelaySchedule); ok && every.Delay < time.Minute {
		return s, tzPrefix, &scheduleError{reason: "InvalidSchedule", msg: fmt.Sprintf(
			"schedule %q runs more often than once a minute, the finest a CronJob can start Jobs: set spec.schedule to @every 1m or more", spec.Schedule)}
	}
	return s, tzPrefix, nil
}

// checkZonePrefix refuses what the cron library cannot take of a "TZ=" or "CRON_TZ=" prefix:
// no space between the zone and the fields (the library slices to the first space, and
// panics when there is none), and the zone "Local", which is each replica's own.
func checkZonePrefix(text string) error {
	prefix, rest, _ := strings.Cut(text, "=")
	zone, fields, spaced := strings.Cut(rest, " ")
	if !spaced || strings.TrimSpace(fields) == "" {
		return &scheduleError{reason: "UnparseableSchedule", msg: fmt.Sprintf(
			"unparseable schedule %q: a %s= time zone prefix must be followed by a space and the schedule (\"%s=UTC */5 * * * *\"); better, move the zone to spec.timeZone and leave only the schedule in spec.schedule; %s",
			text, prefix, prefix, scheduleHelp)}
	}
	if strings.EqualFold(zone, "Local") {
		return &scheduleError{reason: "UnknownTimeZone", msg: fmt.Sprintf(
			"time zone %q in spec.schedule is each replica's own, and replicas may run in different zones: name an IANA time zone (\"%s=Europe/Paris ...\"), or better, set spec.timeZone",
			zone, prefix)}
	}
	return nil
}

// parseStandard is cron.ParseStandard with its panics turned into errors: the checks before
// it cover the panics known, this covers the ones not found yet.
func parseStandard(text string) (sched cron.Schedule, err error) {
	defer func() {
		if p := recover(); p != nil {
			sched, err = nil, fmt.Errorf("the cron parser failed on it (%v)", p)
		}
	}()
	return cron.ParseStandard(text)
}

// errNeverRuns is a schedule that parses but names no time that exists, such as February 31.
var errNeverRuns = errors.New("the schedule names no time that exists (such as February 31)")

// Unmet is what a CronJob's schedule owes at a moment.
type Unmet struct {
	// Latest is the latest schedule time after the CronJob's last one (or its creation) and
	// not after now; zero when none is due.
	Latest time.Time
	// Missed is how many schedule times are due, Latest included, counted up to
	// tooManyMissed+1.
	Missed int
}

// TooMany reports more than tooManyMissed due times: Latest alone is started, with a warning.
func (u Unmet) TooMany() bool { return u.Missed > tooManyMissed }

// UnmetTimes returns the schedule times in (since, now] that no Job was made for: since is the
// CronJob's last schedule time, or its creation. Only the latest is ever started.
func UnmetTimes(s cron.Schedule, since, now time.Time) (Unmet, error) {
	t := s.Next(since)
	if t.IsZero() {
		return Unmet{}, errNeverRuns
	}
	if t.After(now) {
		return Unmet{}, nil
	}
	for n := 1; n <= tooManyMissed; n++ {
		next := s.Next(t)
		if next.IsZero() || next.After(now) {
			return Unmet{Latest: t, Missed: n}, nil
		}
		t = next
	}
	return Unmet{Latest: latestBefore(s, t, now), Missed: tooManyMissed + 1}, nil
}

// latestBefore returns the latest schedule time not after now, given known, one that is not
// after now either, without walking every time between them: it looks back from now over
// doubling spans until a span holds a time, then walks that span only.
func latestBefore(s cron.Schedule, known, now time.Time) time.Time {
	t := known
	for span := time.Second; now.Add(-span).After(known); span *= 2 {
		if c := s.Next(now.Add(-span)); !c.IsZero() && !c.After(now) {
			t = c
			break
		}
	}
	for next := s.Next(t); !next.IsZero() && !next.After(now); next = s.Next(t) {
		t = next
	}
	return t
}

// startingDeadlinePassed reports whether a Job for scheduled is too late to start at now.
func startingDeadlinePassed(spec batch.CronJobSpec, scheduled, now time.Time) bool {
	if spec.StartingDeadlineSeconds == nil {
		return false
	}
	return scheduled.Add(time.Duration(*spec.StartingDeadlineSeconds) * time.Second).Before(now)
}

// untilNext is how long to wait from now for the reconcile at the next schedule time.
func untilNext(s cron.Schedule, now time.Time) (time.Duration, bool) {
	next := s.Next(now)
	if next.IsZero() {
		return 0, false
	}
	return next.Sub(now) + nextScheduleMargin, true
}
