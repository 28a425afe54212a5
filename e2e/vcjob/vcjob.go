// Package vcjob builds the Volcano Jobs the end-to-end suites run on KWOK
// nodes, and creates them: one place for the pod template every suite's
// Jobs share, so that a suite says only what differs (names, sizes, how
// long its pods run and how they end).
package vcjob

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/e2e/cluster"
)

// Image is the image of every test pod: never pulled, since KWOK only
// pretends to run it.
const Image = "example.invalid/batch:latest"

// Default requests of a test pod: what Task's pods ask for.
const (
	CPU    = "100m"
	Memory = "64Mi"
)

// Runs returns the annotations of a pod that runs for duration on a KWOK
// node and then ends with exit code code; an empty code leaves the exit code
// annotation out, so the pod succeeds.
func Runs(duration, code string) map[string]string {
	ann := map[string]string{cluster.PodDurationAnnotation: duration}
	if code != "" {
		ann[cluster.PodExitCodeAnnotation] = code
	}
	return ann
}

// PodSpec is the spec of a test pod: one container "main" of Image asking
// for cpu and memory, never restarted.
func PodSpec(cpu, memory string) corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{
			Name: "main", Image: Image,
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
			}},
		}},
	}
}

// TaskOf is a task of replicas pods of PodSpec(cpu, memory) that carry
// annotations (see Runs).
func TaskOf(name string, replicas int32, annotations map[string]string, cpu, memory string) batch.TaskSpec {
	return batch.TaskSpec{
		Name: name, Replicas: replicas,
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
			Spec:       PodSpec(cpu, memory),
		},
	}
}

// Task is a task of replicas pods asking for CPU and Memory that run for
// duration and end with exit code code ("" to succeed).
func Task(name string, replicas int32, duration, code string) batch.TaskSpec {
	return TaskOf(name, replicas, Runs(duration, code), CPU, Memory)
}

// New is a Job named name in namespace ns, for the volcano scheduler, of
// tasks.
func New(ns, name string, tasks ...batch.TaskSpec) *batch.Job {
	return &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       batch.JobSpec{SchedulerName: "volcano", Tasks: tasks},
	}
}

// Create creates job in its namespace and returns it as the API server
// wrote it; a failure fails the test.
func Create(t testing.TB, vc vcclient.Interface, job *batch.Job) *batch.Job {
	t.Helper()
	got, err := vc.BatchV1alpha1().Jobs(job.Namespace).Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create job %s: %v", job.Name, err)
	}
	return got
}

// CreateRetrying creates job, trying again every 200 ms while the create fails (the API server
// may be down) until limit has passed, and returns how many attempts failed. AlreadyExists
// counts as created: a create whose answer was lost may have landed.
func CreateRetrying(vc vcclient.Interface, job *batch.Job, limit time.Duration) (retries int, err error) {
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := vc.BatchV1alpha1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
		cancel()
		if err == nil || apierrors.IsAlreadyExists(err) {
			return retries, nil
		}
		if time.Now().After(deadline) {
			return retries, fmt.Errorf("create job %s: still failing after %v: %w", job.Name, limit, err)
		}
		retries++
		time.Sleep(200 * time.Millisecond)
	}
}

// Paced calls create(i) for i = 0, 1, ... up to max, one call every period, from workers
// goroutines (so that a slow create does not hold back the pace), until max calls or stop.
// stop ends the pacing and waits for the calls under way; it may be called more than once.
func Paced(period time.Duration, max, workers int, create func(i int)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	work := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range work {
				create(i)
			}
		})
	}
	go func() {
		defer close(done)
		defer wg.Wait()
		defer close(work)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for i := range max {
			select {
			case <-ctx.Done():
				return
			case work <- i:
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}
