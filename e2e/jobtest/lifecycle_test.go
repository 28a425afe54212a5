package jobtest

import (
	"testing"
	"time"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/e2e/stack"
)

func TestJobRunsToCompleted(t *testing.T) {
	s := stack.Start(t, stack.Options{StandIn: true})
	create(t, s, newJob("simple", task("master", 1, "2s", ""), task("worker", 3, "2s", "")))
	job := s.WaitPhase("default", "simple", 60*time.Second, batch.Completed)
	if job.Status.Succeeded != 4 {
		t.Errorf("succeeded %d, want 4\n%s", job.Status.Succeeded, s.Describe("default", "simple"))
	}
	if job.Spec.Queue != "default" || job.Spec.MinAvailable != 4 || job.Spec.MaxRetry != 3 {
		t.Errorf("defaults not applied: queue %q minAvailable %d maxRetry %d", job.Spec.Queue, job.Spec.MinAvailable, job.Spec.MaxRetry)
	}
	pods := s.Pods("default", "simple")
	if len(pods) != 4 {
		t.Fatalf("%d pods, want 4", len(pods))
	}
	for _, p := range pods {
		if p.Annotations["scheduling.k8s.io/group-name"] != "simple-"+string(job.UID) {
			t.Errorf("pod %s group-name %q", p.Name, p.Annotations["scheduling.k8s.io/group-name"])
		}
	}
}
