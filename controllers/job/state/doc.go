// Package state is the decision core of ringfire's Job controller: Volcano's Job state machine,
// lifecycle policies and creation defaults, as plain functions over plain data. It does no I/O;
// the controller reads the cache, calls these functions, and makes the writes they call for.
//
// # The model: decide, act, settle
//
// Volcano runs one state object per Job phase. Its Execute(action) calls killJob, killTarget or
// syncJob and hands them a callback; after deleting or creating pods and counting them, they call
// the callback on the new counts, and the callback may set the next phase. ringfire keeps the I/O
// in the controller and the decisions here, before and after it:
//
//  1. ApplyPolicies turns a Request (an event, or a Command's action) into the action to run, and
//     the policy's timeout if it asks to wait.
//  2. Plan turns the phase and the action into a Step: which pods to kill (none, soft, all, or the
//     request's task, pod or partition), whether to sync, whether status.retryCount and
//     status.version go up, and which Rule settles the phase afterwards.
//  3. The controller acts: it deletes or creates pods and counts them, a pod it deleted counting as
//     terminating.
//  4. Step.Then.Settle gives the next phase from those counts.
//
// The unexported decide is Plan followed by Settle, for when the counts after the act are
// known (the tests). Defaults is the mutating webhook Volcano runs on create, which ringfire
// does not have.
// TaskFailed is the rule by which a pod's change raises the TaskFailed event: the restarts of
// the task's live pods, added up, reach its maxRetry.
// TooLarge says why a Job asks for more replicas than ringfire runs (limits.go); the controller
// asks it before anything sized by the spec is built, and holds such a Job.
//
// # Where ringfire differs from Volcano, and why
//
//   - Restarting with no live pod left syncs instead of killing again (Input.Drained). A second
//     full kill of nothing only bumps the version and deletes the PodGroup the restart recreated,
//     which leaves the Job waiting for a PodGroup that is gone. Volcano's released table kills; its
//     newest source syncs, as ringfire does. With Drained false, Plan gives the released table.
//   - A targeted kill (RestartTask, RestartPod, RestartPartition) keeps the PodGroup: Kill.Full is
//     false for it. Volcano deleted the PodGroup on every kill until mid-2026 (its PR 5342), which
//     stalled a single-pod restart behind a whole re-admission.
//   - A policy with exitCode 0 never matches. Volcano's webhook refuses such a policy, but
//     Volcano's matcher, given one, would fire it on every request that carries no exit code.
//   - Defaults is idempotent and may run on every reconcile, while Volcano's webhook runs once, on
//     create. The controller should apply it when it first sees a Job and write the result back,
//     so a later edit that clears a defaulted field is not silently filled in again.
//
// Everything else follows Volcano as read in its source, including its quirks: every full kill,
// the soft kills of finished Jobs included, bumps status.version; an AbortJob or TerminateJob
// received while Restarting restarts the Job again rather than aborting it; at the last retry a
// kill-all keeps Succeeded and Failed pods (LastRetry); and requests without a job version (a
// PodGroup event) count as stale once the Job has been killed once.
package state
