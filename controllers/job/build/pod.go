package build

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/controllers/job/state"
)

// Job annotations and labels that Volcano passes on to every pod, for the scheduler.
var (
	inheritedAnnotations = []string{scheduling.PodPreemptable, scheduling.CooldownTime, scheduling.RevocableZone}
	inheritedLabels      = []string{scheduling.PodPreemptable, scheduling.CooldownTime}
)

// Pod is the pod at index of task in job, as Volcano's createJobPod makes it: the task's template
// with the Job's naming, ownership, scheduling annotations and labels, and the Job's volumes
// mounted in every container. slot is the Job's ring slot. Plugins mutate the result afterwards.
func Pod(job *batch.Job, task *batch.TaskSpec, index int, slot int) *corev1.Pod {
	template := task.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            PodName(job.Name, task.Name, index),
			Namespace:       job.Namespace,
			Labels:          template.Labels,
			Annotations:     template.Annotations,
			OwnerReferences: []metav1.OwnerReference{OwnerReference(job)},
		},
		Spec: template.Spec,
	}
	// The template's scheduler and priority class win; the Job's fill in; then Volcano's scheduler.
	if pod.Spec.SchedulerName == "" {
		pod.Spec.SchedulerName = job.Spec.SchedulerName
	}
	if pod.Spec.SchedulerName == "" {
		pod.Spec.SchedulerName = state.DefaultSchedulerName
	}
	if pod.Spec.PriorityClassName == "" {
		pod.Spec.PriorityClassName = job.Spec.PriorityClassName
	}
	mountJobVolumes(pod, job)
	annotate(pod, job, task, index)
	label(pod, job, task, index, slot)
	return pod
}

// TaskKey is the name pods record as their task: the task's name, or "default" for an unnamed one.
func TaskKey(task *batch.TaskSpec) string {
	if task.Name == "" {
		return batch.DefaultTaskSpec
	}
	return task.Name
}

// annotate sets the annotations by which the scheduler and the controller know the pod: its
// PodGroup, Job, task, index, queue, the Job's version and retry count, and the scheduling hints
// the Job carries.
func annotate(pod *corev1.Pod, job *batch.Job, task *batch.TaskSpec, index int) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	a := pod.Annotations
	a[batch.TaskIndex] = strconv.Itoa(index)
	a[batch.TaskSpecKey] = TaskKey(task)
	a[scheduling.KubeGroupNameAnnotationKey] = PodGroupName(job)
	a[batch.JobNameKey] = job.Name
	a[batch.QueueNameKey] = job.Spec.Queue
	a[batch.JobVersion] = strconv.Itoa(int(job.Status.Version))
	a[batch.PodTemplateKey] = job.Name + "-" + task.Name
	a[batch.JobRetryCountKey] = strconv.Itoa(int(job.Status.RetryCount))
	if task.TopologyPolicy != "" {
		a[scheduling.NumaPolicyKey] = string(task.TopologyPolicy)
	}
	copyKeys(a, job.Annotations, inheritedAnnotations)
	// A disruption budget is either a minimum or a maximum; the minimum wins when a Job sets both.
	if v, ok := job.Annotations[scheduling.JDBMinAvailable]; ok {
		a[scheduling.JDBMinAvailable] = v
	} else if v, ok := job.Annotations[scheduling.JDBMaxUnavailable]; ok {
		a[scheduling.JDBMaxUnavailable] = v
	}
}

// label sets the labels that select the pod: its Job (the svc plugin's Service selects on it),
// task, index, queue, partition, the hints the Job's labels carry, and the slot.
func label(pod *corev1.Pod, job *batch.Job, task *batch.TaskSpec, index int, slot int) {
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	l := pod.Labels
	l[batch.TaskIndex] = strconv.Itoa(index)
	l[batch.JobNameKey] = job.Name
	l[batch.TaskSpecKey] = TaskKey(task)
	l[batch.JobNamespaceKey] = job.Namespace
	l[batch.QueueNameKey] = job.Spec.Queue
	copyKeys(l, job.Labels, inheritedLabels)
	if p := task.PartitionPolicy; p != nil {
		partition := 0
		if p.PartitionSize > 0 {
			partition = index / int(p.PartitionSize)
		}
		l[batch.TaskPartitionID] = strconv.Itoa(partition)
	}
	l[SlotLabel] = strconv.Itoa(slot)
}

// mountJobVolumes adds a volume for each claim of job.spec.volumes and mounts it in every
// container (not the init containers, as in Volcano). A claim listed twice is mounted once, at the
// first entry's path.
func mountJobVolumes(pod *corev1.Pod, job *batch.Job) {
	seen := map[string]bool{}
	for i, v := range job.Spec.Volumes {
		claim := ClaimName(job, i)
		if seen[claim] {
			continue
		}
		seen[claim] = true
		name := volumeName(job.Name, claim)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
			Name: name,
			VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
			},
		})
		for c := range pod.Spec.Containers {
			pod.Spec.Containers[c].VolumeMounts = append(pod.Spec.Containers[c].VolumeMounts,
				corev1.VolumeMount{Name: name, MountPath: v.MountPath})
		}
	}
}

// copyKeys sets dst[k] = src[k] for each key of keys present in src.
func copyKeys(dst, src map[string]string, keys []string) {
	for _, k := range keys {
		if v, ok := src[k]; ok {
			dst[k] = v
		}
	}
}
