package job

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

func jobAt(rv string) *batch.Job {
	return &batch.Job{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
}

// Two writes in a row before the cache has seen the first: the cache's
// version is older than both, and the newest written Job wins until the
// cache catches up.
func TestWrittenJobsChain(t *testing.T) {
	w := writtenJobs{jobs: map[string]writtenJob{}}
	w.remember("ns/j", "1", jobAt("2"))
	w.remember("ns/j", "2", jobAt("3")) // computed from the written Job
	for _, cached := range []string{"1", "2"} {
		if got := w.latest("ns/j", jobAt(cached)); got.ResourceVersion != "3" {
			t.Errorf("cache at %s: got version %s, want the written 3", cached, got.ResourceVersion)
		}
	}
	if got := w.latest("ns/j", jobAt("3")); got.ResourceVersion != "3" {
		t.Errorf("cache caught up: got %s", got.ResourceVersion)
	}
	if _, ok := w.jobs["ns/j"]; ok {
		t.Error("the written Job is still remembered after the cache caught up")
	}
	if got := w.latest("ns/j", jobAt("7")); got.ResourceVersion != "7" {
		t.Errorf("cache ahead: got %s", got.ResourceVersion)
	}
}
