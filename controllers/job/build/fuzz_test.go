package build

import (
	"strconv"
	"testing"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// FuzzIsPodOf: whatever a pod's name (a forged pod may carry any), telling whether it is one of a
// task's replicas never panics, and says yes exactly for PodName(job, task, i) with i below the
// task's replicas.
func FuzzIsPodOf(f *testing.F) {
	for _, s := range []string{"train-worker-0", "train-worker-3", "train-worker-03", "train-worker--1", "train-worker-",
		"train-worker-+1", "train-worker-99999999999999999999", "x", ""} {
		f.Add("train", "worker", int32(3), s)
	}
	f.Add("a-b", "c", int32(-1), "a-b-c-0")
	f.Fuzz(func(t *testing.T, job, taskName string, replicas int32, name string) {
		task := &batch.TaskSpec{Name: taskName, Replicas: replicas}
		got := IsPodOf(job, task, name)
		want := false
		for _, i := range []int{0, 1, int(replicas) - 1} {
			if i >= 0 && i < int(replicas) && PodName(job, taskName, i) == name {
				want = true
			}
		}
		if want && !got {
			t.Fatalf("IsPodOf(%q, %q/%d, %q) = false for a replica's name", job, taskName, replicas, name)
		}
		if got {
			digits := name[len(job)+len(taskName)+2:]
			i, err := strconv.Atoi(digits)
			if err != nil || i < 0 || i >= int(replicas) || PodName(job, taskName, i) != name {
				t.Fatalf("IsPodOf(%q, %q/%d, %q) = true for no replica's name", job, taskName, replicas, name)
			}
		}
	})
}
