package state

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// restarted is a pod in phase whose init containers and containers restarted the given numbers
// of times.
func restarted(name string, phase corev1.PodPhase, init []int32, containers ...int32) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: phase}}
	for _, n := range init {
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{RestartCount: n})
	}
	for _, n := range containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{RestartCount: n})
	}
	return p
}

func TestTaskFailed(t *testing.T) {
	now := metav1.Now()
	deleting := restarted("d", corev1.PodRunning, nil, 9)
	deleting.DeletionTimestamp = &now
	for _, tc := range []struct {
		name     string
		maxRetry int32
		replicas int32
		pods     []*corev1.Pod
		want     bool
	}{
		{"no restart", 3, 2, []*corev1.Pod{restarted("a", corev1.PodRunning, nil, 0)}, false},
		{"one pod below the limit", 3, 2, []*corev1.Pod{restarted("a", corev1.PodRunning, nil, 2)}, false},
		{"one pod at the limit", 3, 2, []*corev1.Pod{restarted("a", corev1.PodRunning, nil, 3)}, true},
		{"restarts of the task's pods add up", 3, 2, []*corev1.Pod{
			restarted("a", corev1.PodRunning, nil, 2), restarted("b", corev1.PodRunning, nil, 1),
		}, true},
		{"containers of a pod add up", 3, 1, []*corev1.Pod{restarted("a", corev1.PodRunning, nil, 1, 2)}, true},
		{"init containers count", 3, 1, []*corev1.Pod{restarted("a", corev1.PodRunning, []int32{3}, 0)}, true},
		{"a pending pod counts", 2, 1, []*corev1.Pod{restarted("a", corev1.PodPending, nil, 2)}, true},
		{"failed and succeeded pods do not count", 2, 3, []*corev1.Pod{
			restarted("a", corev1.PodFailed, nil, 5), restarted("b", corev1.PodSucceeded, nil, 5), restarted("c", corev1.PodRunning, nil, 1),
		}, false},
		{"a pod being deleted does not count", 2, 2, []*corev1.Pod{deleting, restarted("c", corev1.PodRunning, nil, 1)}, false},
		{"maxRetry 0 stands for 3: below", 0, 1, []*corev1.Pod{restarted("a", corev1.PodRunning, nil, 2)}, false},
		{"maxRetry 0 stands for 3: at", 0, 1, []*corev1.Pod{restarted("a", corev1.PodRunning, nil, 3)}, true},
		{"a negative maxRetry is no limit", -1, 1, []*corev1.Pod{restarted("a", corev1.PodRunning, nil, 100)}, false},
		{"a task of no replicas never fails", 1, 0, []*corev1.Pod{restarted("a", corev1.PodRunning, nil, 5)}, false},
		{"no pods", 1, 2, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := map[string]*corev1.Pod{}
			for _, p := range tc.pods {
				pods[p.Name] = p
			}
			task := &batch.TaskSpec{Name: "t", Replicas: tc.replicas, MaxRetry: tc.maxRetry}
			if got := TaskFailed(task, TaskRestarts(pods, "")); got != tc.want {
				t.Errorf("TaskFailed = %v, want %v", got, tc.want)
			}
		})
	}
}

// TaskRestarts leaves out the pod the caller counts itself, as its change showed it.
func TestTaskRestartsLeavesOutThePodNamed(t *testing.T) {
	pods := map[string]*corev1.Pod{
		"a": restarted("a", corev1.PodRunning, []int32{1}, 2),
		"b": restarted("b", corev1.PodRunning, nil, 4),
	}
	if got := TaskRestarts(pods, ""); got != 7 {
		t.Errorf("TaskRestarts(all) = %d, want 7", got)
	}
	if got := TaskRestarts(pods, "b"); got != 3 {
		t.Errorf("TaskRestarts(except b) = %d, want 3", got)
	}
}
