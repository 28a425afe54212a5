// Package cronjob is ringfire's CronJob controller: it starts the Volcano Jobs of each
// batch.volcano.sh/v1alpha1 CronJob on its schedule, as Kubernetes' CronJob controller (v2)
// starts batch Jobs, on the CronJobs of the slots this replica holds. docs/cronjob.md has the
// behaviour, where it differs from Kubernetes and Volcano, and the numbers measured.
//
// # One reconcile
//
// A CronJob's key is namespace/name and its slot shard.SlotOf(key); one shard.Dispatcher runs
// its reconciles one at a time. A reconcile (sync) reads the CronJob (or the status this
// replica last wrote, until the informer catches up) and the Jobs it controls (an index of
// the replica's cluster-wide Job informer by controller UID), then:
//
//  1. accounts for the Jobs: finished ones leave status.active, the latest success sets
//     lastSuccessfulTime, running ones missing from status.active are added, references to
//     Jobs that are gone are dropped, and finished Jobs beyond the history limits are deleted;
//  2. parses the schedule in its time zone (ParseSchedule) and finds the latest unmet
//     schedule time (UnmetTimes); only that one may start;
//  3. applies startingDeadlineSeconds and the concurrency policy, and creates the Job
//     (JobFor, named JobName) if they allow;
//  4. writes the status if it changed;
//  5. asks the dispatcher to run it again just after the next schedule time. Nothing polls:
//     CronJob and Job events and these wake-ups are all that run a reconcile.
//
// # Writes a stale owner cannot land
//
// Every write is preceded by shard.CheckOwner (the slot's context and the membership's fence
// deadline). Job names are deterministic per scheduled time, so a create from a retry or from
// a replica that lost the slot without knowing it finds AlreadyExists, which counts as done;
// status updates carry the resourceVersion they were computed from; deletes carry the Job's
// UID as a precondition.
//
// # Bad input
//
// A schedule that does not parse, names no real time, or a time zone that does not exist gets
// a Warning event saying what to fix and a log line, and the CronJob is not looked at again
// until it (or one of its Jobs) changes. A Job the API server refuses gets a FailedCreate
// Warning with the server's message and is retried with backoff; after MaxRequeue failures it
// is given up with a RetryLimitReached Warning, and tried again at the next schedule time.
package cronjob
