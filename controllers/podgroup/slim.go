package podgroup

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	topology "volcano.sh/apis/pkg/apis/topology/v1alpha1"
)

// Every replica caches every pending bare pod of the served schedulers, whoever wrote it: a
// tenant's 100 pending pods of a megabyte of labels each would otherwise cost every replica
// 100 MB. slimPod keeps of a pod only what Skip, Name and Build read, each part bounded
// (PodBytes).

// keptAnnotations and keptLabels are the pod's annotations and labels Skip and Build read.
var (
	keptAnnotations = []string{
		scheduling.KubeGroupNameAnnotationKey, scheduling.QueueNameAnnotationKey,
		scheduling.PodPreemptable, scheduling.CooldownTime, scheduling.RevocableZone,
		scheduling.JDBMinAvailable, scheduling.JDBMaxUnavailable,
		topology.NetworkTopologyModeAnnotationKey, topology.NetworkTopologyHighestTierAnnotationKey,
	}
	keptLabels = []string{scheduling.PodPreemptable, scheduling.CooldownTime, batch.JobNameKey}
)

// Bounds of slimPod: a kept annotation's value (a longer one is dropped: no value Build copies
// is that long), and the owner references kept (the controller first), which Build copies to
// the PodGroup and ownerAnnotations reads one by one.
const (
	maxAnnotationValue = 1 << 10
	maxOwners          = 32
)

// PodBytes bounds the JSON of a pod as the controller caches it, but for its containers'
// resources, which are as many as the pod's containers ask for: its identity, 9 annotations
// and 3 labels at their bounds, 32 owner references.
const PodBytes = 32 << 10

// slimPod is the transform of the controller's pod informers: of a pod, its identity and
// deletion, the annotations and labels of keptAnnotations and keptLabels, at most maxOwners
// owner references, and of its spec the scheduler, the node, the priority class and what
// minResources reads (the containers' and init containers' resources, the sidecars' restart
// policy, the pod-level resources and the overhead). It builds a new pod: the object it is
// given may be shared (a fake clientset hands its own objects to watchers).
func slimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	slim := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
			CreationTimestamp: pod.CreationTimestamp, DeletionTimestamp: pod.DeletionTimestamp,
			Annotations:     kept(pod.Annotations, keptAnnotations, maxAnnotationValue),
			Labels:          kept(pod.Labels, keptLabels, 63),
			OwnerReferences: owners(pod.OwnerReferences),
		},
		Spec: corev1.PodSpec{
			SchedulerName:     pod.Spec.SchedulerName,
			NodeName:          pod.Spec.NodeName,
			PriorityClassName: pod.Spec.PriorityClassName,
			Overhead:          pod.Spec.Overhead,
			Resources:         pod.Spec.Resources,
			Containers:        resourcesOf(pod.Spec.Containers),
			InitContainers:    resourcesOf(pod.Spec.InitContainers),
		},
	}
	return slim, nil
}

// kept is the entries of m under keys whose value is at most maxLen bytes; nil when none.
func kept(m map[string]string, keys []string, maxLen int) map[string]string {
	var out map[string]string
	for _, k := range keys {
		if v, ok := m[k]; ok && len(v) <= maxLen {
			if out == nil {
				out = make(map[string]string, 2)
			}
			out[k] = v
		}
	}
	return out
}

// owners is refs with the controller first, at most maxOwners of them.
func owners(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if len(refs) == 0 {
		return nil
	}
	out := make([]metav1.OwnerReference, 0, min(len(refs), maxOwners))
	if c := metav1.GetControllerOfNoCopy(&metav1.ObjectMeta{OwnerReferences: refs}); c != nil {
		out = append(out, *c)
	}
	for _, r := range refs {
		if len(out) == maxOwners {
			break
		}
		if r.Controller == nil || !*r.Controller {
			out = append(out, r)
		}
	}
	return out
}

// resourcesOf keeps of each container its resources and restart policy (a sidecar's counts
// differently).
func resourcesOf(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i := range cs {
		out[i] = corev1.Container{Resources: cs[i].Resources, RestartPolicy: cs[i].RestartPolicy}
	}
	return out
}
