package podgroup

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	topology "volcano.sh/apis/pkg/apis/topology/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/build"
	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/shard"
)

// DefaultQueue is the queue of a pod that names none.
const DefaultQueue = "default"

// Skip says why pod gets no PodGroup from this controller, or is empty when it needs one: it
// must ask for a served scheduler, be neither bound nor being deleted, carry no group-name
// annotation (a pod of a Job carries its Job's), and not be controlled by a Volcano Job.
func Skip(pod *corev1.Pod, served []string) string {
	switch {
	case !slices.Contains(served, pod.Spec.SchedulerName):
		return "scheduler " + pod.Spec.SchedulerName + " is not served"
	case pod.Annotations[scheduling.KubeGroupNameAnnotationKey] != "":
		return "it has a PodGroup"
	case pod.DeletionTimestamp != nil:
		return "it is being deleted"
	case pod.Spec.NodeName != "":
		return "it is bound"
	}
	if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "Job" &&
		strings.HasPrefix(ref.APIVersion, batch.SchemeGroupVersion.Group+"/") {
		return "a Volcano Job controls it"
	}
	return ""
}

// Name is the PodGroup of pod, as Volcano names it: podgroup-<UID of the pod's controller>,
// or podgroup-<pod UID> for a pod without one. Pods of one ReplicaSet or StatefulSet share it.
func Name(pod *corev1.Pod) string {
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return batch.PodgroupNamePrefix + string(ref.UID)
	}
	return batch.PodgroupNamePrefix + string(pod.UID)
}

// Build is the PodGroup of pod, as Volcano's pg controller builds it (buildPodGroupFromPod):
//   - owned by the pod's controller and its other owners when it has a controller, else
//     controlled by the pod, so that it is garbage-collected with them;
//   - minMember 1, or the owner's scheduling.volcano.sh/group-min-member annotation when
//     ownerAnnotations has a valid one; minResources the pod's quota usage times minMember;
//   - the pod's priority class, and its queue (annotation scheduling.volcano.sh/queue-name),
//     else the default queue;
//   - the owner's volcano.sh/ annotations, then the pod's preemptable, cooldown-time,
//     revocable-zone and disruption-budget annotations and labels, and the network topology
//     its annotations ask for.
//
// ownerAnnotations are the annotations of the pod's owners (see the controller's
// InheritOwnerAnnotations), nil for none. slot is the ring slot of the pod's key, set as
// SlotLabel like on every object ringfire creates.
func Build(pod *corev1.Pod, slot int, ownerAnnotations map[string]string) *scheduling.PodGroup {
	minMember := minMemberOf(ownerAnnotations)
	pg := &scheduling.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name:            Name(pod),
			Namespace:       pod.Namespace,
			Labels:          map[string]string{shard.SlotLabel: strconv.Itoa(slot)},
			Annotations:     map[string]string{},
			OwnerReferences: ownerReferences(pod),
		},
		Spec: scheduling.PodGroupSpec{
			MinMember:         minMember,
			Queue:             DefaultQueue,
			PriorityClassName: pod.Spec.PriorityClassName,
			MinResources:      minResources(pod, minMember),
			NetworkTopology:   networkTopology(pod.Annotations),
		},
		Status: scheduling.PodGroupStatus{Phase: scheduling.PodGroupPending},
	}
	for k, v := range ownerAnnotations {
		if strings.HasPrefix(k, scheduling.AnnotationPrefix) {
			pg.Annotations[k] = v
		}
	}
	if q := pod.Annotations[scheduling.QueueNameAnnotationKey]; q != "" {
		pg.Spec.Queue = q
	}
	copyKeys(pg.Annotations, pod.Annotations, scheduling.PodPreemptable, scheduling.CooldownTime, scheduling.RevocableZone)
	copyKeys(pg.Labels, pod.Labels, scheduling.PodPreemptable, scheduling.CooldownTime)
	if v, ok := pod.Annotations[scheduling.JDBMinAvailable]; ok {
		pg.Annotations[scheduling.JDBMinAvailable] = v
	} else if v, ok := pod.Annotations[scheduling.JDBMaxUnavailable]; ok {
		pg.Annotations[scheduling.JDBMaxUnavailable] = v
	}
	return pg
}

// ownerReferences are the pod's owners when one of them is its controller, else a controller
// reference to the pod itself.
func ownerReferences(pod *corev1.Pod) []metav1.OwnerReference {
	if metav1.GetControllerOf(pod) != nil {
		return slices.Clone(pod.OwnerReferences)
	}
	return []metav1.OwnerReference{*metav1.NewControllerRef(pod, corev1.SchemeGroupVersion.WithKind("Pod"))}
}

// minMemberOf is the owner's group-min-member annotation, or 1 when it is absent, not a
// number, or negative.
func minMemberOf(ownerAnnotations map[string]string) int32 {
	v, ok := ownerAnnotations[scheduling.VolcanoGroupMinMemberAnnotationKey]
	if !ok {
		return 1
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return 1
	}
	return int32(n)
}

// MinMemberTooLarge says why the owner's group-min-member annotation is refused, or is "": a
// gang of more pods than a Job may have (state.MaxReplicas) is never built, so that nothing is
// sized by a number one annotation can set to 2147483647. The pod gets no PodGroup and so is not
// scheduled, as it would not be with the gang it asks for.
func MinMemberTooLarge(ownerAnnotations map[string]string) string {
	n := minMemberOf(ownerAnnotations)
	if n <= state.MaxReplicas {
		return ""
	}
	return fmt.Sprintf("its owner's annotation %s asks for a gang of %d pods; ringfire runs at most %d: "+
		"lower it on the owner, then re-create the pod (docs/jobs.md, Limits)",
		scheduling.VolcanoGroupMinMemberAnnotationKey, n, state.MaxReplicas)
}

// minResources is the quota usage of n copies of pod, Volcano's CalTaskRequests. It is the one
// implementation ringfire has of that measure, the Job builder's: a Job of one task of n
// replicas of the pod's spec, all of them required, sums exactly n pods' usage.
func minResources(pod *corev1.Pod, n int32) *corev1.ResourceList {
	job := &batch.Job{Spec: batch.JobSpec{MinAvailable: n, Tasks: []batch.TaskSpec{{
		Replicas: n, Template: corev1.PodTemplateSpec{Spec: pod.Spec},
	}}}}
	usage := build.MinResources(job, nil)
	return &usage
}

// networkTopology is the constraint the pod's volcano.sh/network-topology-mode and
// volcano.sh/network-topology-highest-tier annotations ask for, or nil when it has neither. The
// mode is hard unless the annotation says soft (any other value is hard, as in Volcano); a tier
// that is not a number is left unset.
func networkTopology(annotations map[string]string) *scheduling.NetworkTopologySpec {
	mode, hasMode := annotations[topology.NetworkTopologyModeAnnotationKey]
	tier, hasTier := annotations[topology.NetworkTopologyHighestTierAnnotationKey]
	if !hasMode && !hasTier {
		return nil
	}
	nt := &scheduling.NetworkTopologySpec{Mode: scheduling.HardNetworkTopologyMode}
	if m := scheduling.NetworkTopologyMode(strings.ToLower(mode)); m == scheduling.SoftNetworkTopologyMode {
		nt.Mode = m
	}
	if hasTier {
		if n, err := strconv.Atoi(tier); err == nil {
			nt.HighestTierAllowed = &n
		}
	}
	return nt
}

// copyKeys copies the listed keys of src that are set into dst.
func copyKeys(dst, src map[string]string, keys ...string) {
	for _, k := range keys {
		if v, ok := src[k]; ok {
			dst[k] = v
		}
	}
}
