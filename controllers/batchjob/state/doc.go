// Package state is the pure decision core of ringfire's batch Job controller.
//
// ringfire runs the batch/v1 Job semantics for every Job whose
// spec.managedBy is ControllerName ("ringfire.io/job-controller"). The
// upstream Kubernetes Job controller ignores such Jobs, and the API server
// checks every status that ringfire writes for them, so the behaviour here
// follows the Kubernetes v1.36 Job controller closely: pod counting,
// finalizer-based tracking of terminated pods, parallelism and completions for
// NonIndexed and Indexed Jobs, backoffLimit, activeDeadlineSeconds,
// suspension, podReplacementPolicy, the pod-failure backoff, podFailurePolicy
// (policy.go), backoffLimitPerIndex with maxFailedIndexes (perindex.go) and
// successPolicy (successpolicy.go).
//
// The package does no I/O. On every sync the controller gathers the Job, the
// pods it controls, the current time and its per-Job Backoff record into an
// Input and calls Decide. The returned Decision tells it what to do:
//
//  1. write Decision.Status (when non-nil) with the Job's resourceVersion, so
//     that a stale decision is rejected rather than applied;
//  2. create Decision.Create pods with Decision.PodFor, in slow-start
//     batches (for a Job with backoffLimitPerIndex it gives a replacement the
//     failure counts of its index, Decision.IndexFailures; the package
//     function PodFor starts each index at zero, which Decide tolerates by
//     also counting the index's earlier failed pods, but the annotations are
//     then wrong for anyone else reading them);
//  3. strip TrackingFinalizer from Decision.RemoveFinalizers and delete
//     Decision.Delete (a pod present in both loses its finalizer first);
//  4. store Decision.Backoff as the Job's new Backoff record, record
//     Decision.Events, and requeue the Job after Decision.RequeueAfter.
//
// Terminated pods are accounted for in two phases. A sync that first sees a
// finished pod records its UID in status.uncountedTerminatedPods (for an
// Indexed Job, a succeeded pod's index goes straight into
// status.completedIndexes). Only a later sync, whose input status already
// carries that record, lists the pod in RemoveFinalizers; and only once the
// finalizer is gone does a sync move the UID into status.succeeded or
// status.failed. A pod is therefore never counted twice and never lost, even
// when a write fails or the controller restarts between steps.
package state
