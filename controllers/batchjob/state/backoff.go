package state

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// nextBackoff folds the pods that finished since the last sync into the
// record. A success clears it, except for failures that happened after the
// latest success.
func nextBackoff(prev Backoff, ok, failed []*corev1.Pod) Backoff {
	okTimes := finishTimes(ok)
	failTimes := finishTimes(failed)
	if len(okTimes) == 0 {
		if len(failTimes) == 0 {
			return prev
		}
		return Backoff{
			FailuresAfterLastSuccess: prev.FailuresAfterLastSuccess + int32(len(failTimes)),
			LastFailure:              failTimes[len(failTimes)-1],
		}
	}
	lastOK := okTimes[len(okTimes)-1]
	var out Backoff
	for i := len(failTimes) - 1; i >= 0 && failTimes[i].After(lastOK); i-- {
		if out.LastFailure.IsZero() {
			out.LastFailure = failTimes[i]
		}
		out.FailuresAfterLastSuccess++
	}
	return out
}

func finishTimes(pods []*corev1.Pod) []time.Time {
	ts := make([]time.Time, len(pods))
	for i, p := range pods {
		ts[i] = finishTime(p)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	return ts
}

// backoffLeft is how long pod creation must still wait after the recorded
// failures: PodFailureBackoff doubled per extra failure, capped at
// MaxPodFailureBackoff, counted from the last failure.
func backoffLeft(b Backoff, now time.Time) time.Duration {
	if b.FailuresAfterLastSuccess == 0 {
		return 0
	}
	d := PodFailureBackoff
	for i := int32(1); i < b.FailuresAfterLastSuccess; i++ {
		d *= 2
		if d >= MaxPodFailureBackoff {
			d = MaxPodFailureBackoff
			break
		}
	}
	elapsed := now.Sub(b.LastFailure)
	if d < elapsed {
		return 0
	}
	return d - elapsed
}
