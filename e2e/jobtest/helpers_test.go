package jobtest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/stack"
)

// task is a task of replicas pods that run for duration and exit with code.
func task(name string, replicas int32, duration string, code string) batch.TaskSpec {
	ann := map[string]string{cluster.PodDurationAnnotation: duration}
	if code != "" {
		ann[cluster.PodExitCodeAnnotation] = code
	}
	return batch.TaskSpec{
		Name: name, Replicas: replicas,
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: ann},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "main", Image: "example.invalid/batch:latest",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
					}},
				}},
			},
		},
	}
}

func newJob(name string, tasks ...batch.TaskSpec) *batch.Job {
	return &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       batch.JobSpec{SchedulerName: "volcano", Tasks: tasks},
	}
}

func create(t *testing.T, s *stack.Stack, job *batch.Job) *batch.Job {
	t.Helper()
	got, err := s.Volcano.BatchV1alpha1().Jobs(job.Namespace).Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create job %s: %v", job.Name, err)
	}
	return got
}
