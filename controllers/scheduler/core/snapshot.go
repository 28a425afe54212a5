package core

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// Snapshot is everything one scheduling cycle looks at, copied out of the
// informers by the caller. Allocate only reads it.
type Snapshot struct {
	Nodes  []Node
	Queues []Queue
	Jobs   []Job
	// Pods are the pods on the nodes that inter-pod affinity looks at: those
	// not finished. When no pending task has a pod (anti-)affinity term, the
	// pods without one may be left out: they change nothing then.
	Pods []PlacedPod
	// Namespaces are the labels of namespaces, for the namespaceSelector of
	// pod (anti-)affinity terms. A namespace missing here has only the
	// kubernetes.io/metadata.name label.
	Namespaces map[string]map[string]string
}

// PlacedPod is a pod on a node, as inter-pod affinity sees it.
type PlacedPod struct {
	Namespace       string
	Node            string
	Labels          map[string]string
	PodAffinity     *corev1.PodAffinity
	PodAntiAffinity *corev1.PodAntiAffinity
}

// Node is a node as the scheduler sees it.
type Node struct {
	Name string
	// Allocatable is the node's status.allocatable. A node that lists no
	// "pods" takes any number of pods.
	Allocatable corev1.ResourceList
	// Used is the sum of the requests (see PodRequests) of the pods bound to
	// the node that still hold resources, with "pods" set to their count.
	Used          corev1.ResourceList
	Labels        map[string]string
	Taints        []corev1.Taint
	Unschedulable bool
}

// Queue is a Volcano Queue (scheduling.volcano.sh/v1beta1).
type Queue struct {
	Name string
	// Weight sets the queue's share of the cluster against the other queues;
	// below 1 counts as 1 (Volcano's default).
	Weight int32
	// Capability caps what the queue's jobs may hold in total; a resource it
	// does not name is not capped.
	Capability corev1.ResourceList
	// State is the queue's status.state; only an Open queue admits or places
	// anything new. Empty counts as Open.
	State vcv1beta1.QueueState
}

// Job is a PodGroup and its pods: the unit the gang scheduler admits and places.
type Job struct {
	Namespace string
	Name      string // the PodGroup's name
	Queue     string
	// Priority is the value of the PodGroup's PriorityClass; higher goes first.
	Priority     int32
	CreationTime time.Time
	// MinMember is how many pods must be placed together (spec.minMember).
	MinMember int32
	// MinTaskMember is the minimum per task name (spec.minTaskMember). As in
	// Volcano, it is enforced only when MinMember is at least its sum.
	MinTaskMember map[string]int32
	// MinResources is what admission reserves for the gang (spec.minResources).
	MinResources corev1.ResourceList
	// Phase is the PodGroup's status.phase; empty counts as Pending.
	Phase vcv1beta1.PodGroupPhase
	// Bound counts, per task name, the job's pods already on a node (bound,
	// running or succeeded): they count toward MinMember and MinTaskMember.
	Bound map[string]int32
	// Allocated is the sum of the requests of the job's pods that hold
	// resources on nodes: what its queue is charged for already.
	Allocated corev1.ResourceList
	// Pending are the job's pods waiting for a node.
	Pending []Task
}

// Task is one pending pod of a job.
type Task struct {
	Key  string // namespace/name of the pod
	Name string // its task name (annotation volcano.sh/task-spec)
	// Requests is what the pod needs on a node: see PodRequests.
	Requests     corev1.ResourceList
	NodeSelector map[string]string
	// Affinity is the pod's requiredDuringSchedulingIgnoredDuringExecution
	// node affinity; nil places no constraint.
	Affinity    *corev1.NodeSelector
	Tolerations []corev1.Toleration
	// Labels are the pod's labels, which pod (anti-)affinity terms select.
	Labels map[string]string
	// PodAffinity and PodAntiAffinity are the pod's inter-pod affinity; nil
	// places no constraint. Its namespace is its job's.
	PodAffinity     *corev1.PodAffinity
	PodAntiAffinity *corev1.PodAntiAffinity
}

// JobKey is the namespace/name that names a job in a Result.
func (j *Job) JobKey() string { return toolscache.NewObjectName(j.Namespace, j.Name).String() }

// TaskSpecAnnotation names a pod's task within its Volcano Job.
const TaskSpecAnnotation = "volcano.sh/task-spec"

// TaskFromPod describes a pending pod as a Task.
func TaskFromPod(pod *corev1.Pod) Task {
	t := Task{
		Key:          toolscache.MetaObjectToName(pod).String(),
		Name:         pod.Annotations[TaskSpecAnnotation],
		Requests:     PodRequests(pod),
		NodeSelector: pod.Spec.NodeSelector,
		Tolerations:  pod.Spec.Tolerations,
		Labels:       pod.Labels,
	}
	if a := pod.Spec.Affinity; a != nil {
		if a.NodeAffinity != nil {
			t.Affinity = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		}
		t.PodAffinity, t.PodAntiAffinity = a.PodAffinity, a.PodAntiAffinity
	}
	return t
}

// PodRequests is what a pod needs on a node, the way the kubelet and
// kube-scheduler count it: the larger of (all containers plus sidecars) and
// (each init container plus the sidecars started before it), plus the pod
// overhead. Sidecars are init containers with restartPolicy Always.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		AddList(total, pod.Spec.Containers[i].Resources.Requests)
	}
	sidecars := corev1.ResourceList{}
	initPeak := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			AddList(sidecars, c.Resources.Requests)
			maxList(initPeak, sidecars)
			continue
		}
		step := sidecars.DeepCopy()
		AddList(step, c.Resources.Requests)
		maxList(initPeak, step)
	}
	AddList(total, sidecars)
	maxList(total, initPeak)
	AddList(total, pod.Spec.Overhead)
	return total
}

// AddList adds b into a.
func AddList(a, b corev1.ResourceList) {
	for name, q := range b {
		sum, ok := a[name]
		if !ok {
			a[name] = q.DeepCopy()
			continue
		}
		sum.Add(q)
		a[name] = sum
	}
}

// maxList raises each resource of a to at least its value in b.
func maxList(a, b corev1.ResourceList) {
	for name, q := range b {
		if cur, ok := a[name]; !ok || q.Cmp(cur) > 0 {
			a[name] = q.DeepCopy()
		}
	}
}
