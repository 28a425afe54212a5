package plugins

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestEnvPlugin(t *testing.T) {
	job := testJob(task("worker", 4))
	pod := podOf(t, job, "worker", 3)
	if err := mustNew(t, "env").OnPodCreate(pod, job); err != nil {
		t.Fatal(err)
	}
	want := []corev1.EnvVar{{Name: "VK_TASK_INDEX", Value: "3"}, {Name: "VC_TASK_INDEX", Value: "3"}}
	for _, c := range append(pod.Spec.Containers, pod.Spec.InitContainers...) {
		equal(t, c.Name+" env", c.Env, want)
	}

	// Without the task-index label the index is read from the name, as Volcano does.
	pod = podOf(t, job, "worker", 2)
	delete(pod.Labels, "volcano.sh/task-index")
	if err := mustNew(t, "env").OnPodCreate(pod, job); err != nil {
		t.Fatal(err)
	}
	if got := envOf(pod.Spec.Containers[0])["VC_TASK_INDEX"]; got != "2" {
		t.Errorf("VC_TASK_INDEX from the name = %q, want 2", got)
	}

	stray := &corev1.Pod{}
	stray.Name = "no-index-here"
	if err := mustNew(t, "env").OnPodCreate(stray, job); err == nil {
		t.Errorf("a pod without an index gives no error")
	}
}
