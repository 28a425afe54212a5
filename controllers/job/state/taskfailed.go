package state

import (
	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// TaskFailed is Volcano's TaskFailed condition: the containers and init containers of the
// task's live pods (pending or running, not being deleted) have restarted maxRetry times or more,
// all told. maxRetry is the task's; 0 stands for 3 (a Job stored before the field had its
// default) and a negative one for no limit. A task of no replicas never fails.
//
// The controller raises TaskFailed when a pod of the task changes while it is pending or running
// and this holds; a restart is seen only as the kubelet's status update of the pod.
func TaskFailed(task *batch.TaskSpec, pods map[string]*corev1.Pod) bool {
	limit := task.MaxRetry
	if task.Replicas == 0 || limit < 0 {
		return false
	}
	if limit == 0 {
		limit = DefaultMaxRetry
	}
	var restarts int32
	for _, p := range pods {
		if p.DeletionTimestamp != nil || (p.Status.Phase != corev1.PodPending && p.Status.Phase != corev1.PodRunning) {
			continue
		}
		for _, s := range p.Status.InitContainerStatuses {
			restarts += s.RestartCount
		}
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
	}
	return restarts >= limit
}
