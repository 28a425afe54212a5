package state

import (
	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// TaskFailed is Volcano's TaskFailed condition: the containers and init containers of the
// task's live pods (pending or running, not being deleted) have restarted maxRetry times or more,
// all told. maxRetry is the task's; 0 stands for 3 (a Job stored before the field had its
// default) and a negative one for no limit. A task of no replicas never fails. restarts are the
// task's live pods' (TaskRestarts).
//
// The controller asks when a pod of the task changes while it is pending or running, counting
// that pod as the change showed it; a restart is seen only as the kubelet's status update of
// the pod.
func TaskFailed(task *batch.TaskSpec, restarts int32) bool {
	limit := task.MaxRetry
	if task.Replicas == 0 || limit < 0 {
		return false
	}
	if limit == 0 {
		limit = DefaultMaxRetry
	}
	return restarts >= limit
}

// TaskRestarts adds up the restarts of the live pods among pods, leaving out the one named
// except (whose restarts the caller counts as it saw them).
func TaskRestarts(pods map[string]*corev1.Pod, except string) int32 {
	var restarts int32
	for name, p := range pods {
		if name == except || !live(p) {
			continue
		}
		restarts += PodRestarts(p)
	}
	return restarts
}

// live reports whether the pod counts toward TaskFailed: pending or running, not being deleted.
func live(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && (p.Status.Phase == corev1.PodPending || p.Status.Phase == corev1.PodRunning)
}

// PodRestarts is how often the pod's containers and init containers have restarted.
func PodRestarts(p *corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.InitContainerStatuses {
		n += s.RestartCount
	}
	for _, s := range p.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}
