package scheduler

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/controllers/scheduler/core"
)

// Builders of API objects for the controller's tests.

// epoch is the tests' start of time, as in core's tests.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// podTermOf is a pod (anti-)affinity term selecting the pods labelled sel
// (key=value pairs), by topology key, as in core's tests.
func podTermOf(topology string, sel ...string) corev1.PodAffinityTerm {
	m := map[string]string{}
	for _, kv := range sel {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: m}, TopologyKey: topology}
}

func kubeNode(name, cpu string) *corev1.Node {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{
			Allocatable: alloc, Capacity: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

// kubePod is pod <group>-<task>-<i> of PodGroup group in namespace ns,
// asking cpu, unbound, for the volcano scheduler.
func kubePod(ns, group, task string, i int, cpu string) *corev1.Pod {
	name := fmt.Sprintf("%s-%s-%d", group, task, i)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID("uid-" + name),
			Annotations: map[string]string{
				vcv1beta1.KubeGroupNameAnnotationKey: group,
				core.TaskSpecAnnotation:              task,
			},
		},
		Spec: corev1.PodSpec{
			SchedulerName: "volcano",
			Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
			}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// onNode returns pod bound to node in phase.
func onNode(pod *corev1.Pod, node string, phase corev1.PodPhase) *corev1.Pod {
	pod = pod.DeepCopy()
	pod.Spec.NodeName = node
	pod.Status.Phase = phase
	return pod
}

// podGroupObj is a PodGroup of minMember pods of cpu each in queue, with phase.
func podGroupObj(ns, name, queue string, minMember int32, cpu string, phase vcv1beta1.PodGroupPhase) *vcv1beta1.PodGroup {
	q := resource.MustParse(cpu)
	total := resource.NewMilliQuantity(q.MilliValue()*int64(minMember), resource.DecimalSI)
	min := corev1.ResourceList{corev1.ResourceCPU: *total}
	return &vcv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1"},
		Spec:       vcv1beta1.PodGroupSpec{MinMember: minMember, Queue: queue, MinResources: &min},
		Status:     vcv1beta1.PodGroupStatus{Phase: phase},
	}
}

func queueObj(name string, weight int32) *vcv1beta1.Queue {
	return &vcv1beta1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       vcv1beta1.QueueSpec{Weight: weight},
		Status:     vcv1beta1.QueueStatus{State: vcv1beta1.QueueStateOpen},
	}
}
