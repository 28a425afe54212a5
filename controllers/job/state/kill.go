package state

import (
	corev1 "k8s.io/api/core/v1"
)

// Kill says which of a Job's pods an action deletes.
type Kill uint8

const (
	// KillNone deletes nothing.
	KillNone Kill = iota
	// KillSoft deletes every pod that has not finished: Succeeded and Failed pods are kept, so
	// their logs and exit codes stay visible.
	KillSoft
	// KillAll deletes every pod.
	KillAll
	// KillTask deletes every pod of the request's task, whatever its phase.
	KillTask
	// KillPod deletes the request's pod, whatever its phase.
	KillPod
	// KillPartition deletes every pod of the request's partition of its task, whatever their phase.
	KillPartition
)

// Full reports whether k is a kill of the whole Job (Volcano's killJob). Only a full kill bumps
// status.version and deletes the PodGroup; a targeted kill does neither.
func (k Kill) Full() bool { return k == KillSoft || k == KillAll }

// targeted reports whether k deletes the pods of one task, pod or partition (Volcano's killTarget).
func (k Kill) targeted() bool { return k == KillTask || k == KillPod || k == KillPartition }

// Deletes reports whether a full kill deletes a pod in the given phase. A pod that already has a
// deletion timestamp is never deleted again; it counts as terminating. Targeted kills delete every
// pod of their target and do not consult this.
func (k Kill) Deletes(phase corev1.PodPhase) bool {
	switch k {
	case KillAll:
		return true
	case KillSoft:
		return phase != corev1.PodSucceeded && phase != corev1.PodFailed
	}
	return false
}

// LastRetry reports whether a restart with this retry count (before it is incremented) is the
// job's last. Volcano's killJob keeps Succeeded and Failed pods at the last retry even when the
// action asked to kill all, so the pods that made the job fail are still there to inspect.
// Compared in int64: maxRetry-1 in int32 wraps at maxRetry's least value.
func LastRetry(retryCount, maxRetry int32) bool { return int64(retryCount) >= int64(maxRetry)-1 }

func (k Kill) String() string {
	switch k {
	case KillNone:
		return "none"
	case KillSoft:
		return "soft"
	case KillAll:
		return "all"
	case KillTask:
		return "task"
	case KillPod:
		return "pod"
	case KillPartition:
		return "partition"
	}
	return "invalid"
}
