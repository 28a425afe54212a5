package core

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func expr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func affinity(terms ...[]corev1.NodeSelectorRequirement) *corev1.NodeSelector {
	sel := &corev1.NodeSelector{}
	for _, reqs := range terms {
		sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: reqs})
	}
	return sel
}

func TestStaticReason(t *testing.T) {
	node := Node{
		Name:   "n1",
		Labels: map[string]string{"zone": "a", "gpus": "8", "tier": "batch"},
	}
	tainted := node
	tainted.Taints = []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}}
	noExec := node
	noExec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}}
	soft := node
	soft.Taints = []corev1.Taint{{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}}
	cordoned := node
	cordoned.Unschedulable = true

	tests := []struct {
		name string
		task Task
		node Node
		want string
	}{
		{"no constraints", Task{}, node, ""},
		{"selector matches", Task{NodeSelector: map[string]string{"zone": "a"}}, node, ""},
		{"selector value differs", Task{NodeSelector: map[string]string{"zone": "b"}}, node, reasonAffinity},
		{"selector label missing", Task{NodeSelector: map[string]string{"rack": "1"}}, node, reasonAffinity},
		{"In", Task{Affinity: affinity([]corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpIn, "b", "a")})}, node, ""},
		{"In misses", Task{Affinity: affinity([]corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpIn, "b")})}, node, reasonAffinity},
		{"NotIn", Task{Affinity: affinity([]corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpNotIn, "b")})}, node, ""},
		{"NotIn hits", Task{Affinity: affinity([]corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpNotIn, "a")})}, node, reasonAffinity},
		{"NotIn on a missing label", Task{Affinity: affinity([]corev1.NodeSelectorRequirement{expr("rack", corev1.NodeSelectorOpNotIn, "1")})}, node, ""},
		{"Exists", Task{Affinity: affinity([]corev1.NodeSelectorRequirement{expr("tier", corev1.NodeSelectorOpExists)})}, node, ""},
		{"Exists misses", Task{Affinity: affinity([]corev1.NodeSelectorRequirement{expr("rack", corev1.NodeSelectorOpExists)})}, node, reasonAffinity},
		{"DoesNotExist", Task{Affinity: affinity([]corev1.NodeSelectorRequirement{expr("rack", corev1.NodeSelectorOpDoesNotExist)})}, node, ""},
		{"DoesNotExist misses", Task{Affinity: affinity([]corev1.NodeSelectorRequirement{expr("tier", corev1.NodeSelectorOpDoesNotExist)})}, node, reasonAffinity},
		{"Gt", Task{Affinity: affinity([]corev1.NodeSelectorRequirement{expr("gpus", corev1.NodeSelectorOpGt, "4")})}, node, ""},
		{"Gt misses", Task{Affinity: affinity([]corev1.NodeSelectorRequirement{expr("gpus", corev1.NodeSelectorOpGt, "8")})}, node, reasonAffinity},
		{"Lt", Task{Affinity: affinity([]corev1.NodeSelectorRequirement{expr("gpus", corev1.NodeSelectorOpLt, "9")})}, node, ""},
		{"Lt on a non-number", Task{Affinity: affinity([]corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpLt, "9")})}, node, reasonAffinity},
		{"Gt with two values is invalid", Task{Affinity: affinity([]corev1.NodeSelectorRequirement{expr("gpus", corev1.NodeSelectorOpGt, "1", "2")})}, node, reasonAffinity},
		{"terms are ORed", Task{Affinity: affinity(
			[]corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpIn, "b")},
			[]corev1.NodeSelectorRequirement{expr("tier", corev1.NodeSelectorOpIn, "batch")},
		)}, node, ""},
		{"requirements of a term are ANDed", Task{Affinity: affinity(
			[]corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpIn, "a"), expr("tier", corev1.NodeSelectorOpIn, "web")},
		)}, node, reasonAffinity},
		{"no terms match nothing", Task{Affinity: &corev1.NodeSelector{}}, node, reasonAffinity},
		{"an empty term matches nothing", Task{Affinity: affinity([]corev1.NodeSelectorRequirement{})}, node, reasonAffinity},
		{"matchFields metadata.name", Task{Affinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "n1")},
		}}}}, node, ""},
		{"matchFields metadata.name NotIn", Task{Affinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpNotIn, "n1")},
		}}}}, node, reasonAffinity},
		{"matchFields on another field", Task{Affinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.uid", corev1.NodeSelectorOpIn, "x")},
		}}}}, node, reasonAffinity},
		{"NoSchedule taint", Task{}, tainted, "node(s) had untolerated taint {dedicated: ml}"},
		{"tolerated by Equal", Task{Tolerations: []corev1.Toleration{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}}}, tainted, ""},
		{"Equal with another value", Task{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web"}}}, tainted, "node(s) had untolerated taint {dedicated: ml}"},
		{"tolerated by Exists", Task{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}}, tainted, ""},
		{"tolerated by Exists on every key", Task{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}, tainted, ""},
		{"toleration for another effect", Task{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}}, tainted, "node(s) had untolerated taint {dedicated: ml}"},
		{"NoExecute taint", Task{}, noExec, "node(s) had untolerated taint {maintenance: }"},
		{"PreferNoSchedule does not filter", Task{}, soft, ""},
		{"cordoned", Task{}, cordoned, reasonUnschedulable},
		{"cordoned but tolerated", Task{Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}, cordoned, ""},
		{"taints are checked before affinity", Task{NodeSelector: map[string]string{"zone": "b"}}, tainted, "node(s) had untolerated taint {dedicated: ml}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := staticReason(&tc.task, &tc.node); got != tc.want {
				t.Errorf("staticReason = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestConstraintsSteerPlacement(t *testing.T) {
	gpuNode := newNode("gpu-0", "8", "32Gi")
	gpuNode.Labels["accelerator"] = "a100"
	gpuNode.Allocatable["nvidia.com/gpu"] = resource.MustParse("8")
	gpuNode.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}
	zoneA := newNode("cpu-a", "8", "32Gi")
	zoneA.Labels["zone"] = "a"
	zoneB := newNode("cpu-b", "8", "32Gi")
	zoneB.Labels["zone"] = "b"
	cluster := []Node{gpuNode, zoneA, zoneB}

	tolerateGPU := []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	tests := []struct {
		name   string
		mutate func(*Task)
		want   string // node, or "" for unschedulable
	}{
		{"nodeSelector", func(t *Task) { t.NodeSelector = map[string]string{"zone": "b"} }, "cpu-b"},
		{"affinity In", func(t *Task) {
			t.Affinity = affinity([]corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpIn, "b")})
		}, "cpu-b"},
		{"affinity NotIn", func(t *Task) {
			t.Affinity = affinity([]corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpNotIn, "a")})
		}, "cpu-b"},
		{"GPU request with toleration", func(t *Task) {
			t.Requests["nvidia.com/gpu"] = resource.MustParse("2")
			t.Tolerations = tolerateGPU
		}, "gpu-0"},
		{"GPU request without toleration", func(t *Task) { t.Requests["nvidia.com/gpu"] = resource.MustParse("2") }, ""},
		{"toleration alone allows but does not attract", func(t *Task) {
			t.Tolerations = tolerateGPU
			t.NodeSelector = map[string]string{"accelerator": "a100"}
		}, "gpu-0"},
		{"affinity to a node name", func(t *Task) {
			t.Affinity = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "cpu-a")},
			}}}
		}, "cpu-a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := gang("one", "default", 1, "1", "1Gi")
			tc.mutate(&j.Pending[0])
			snap := Snapshot{Nodes: cluster, Queues: []Queue{openQueue("default", 1)}, Jobs: []Job{j}}
			r := Allocate(snap, DefaultOptions())
			got := ""
			if len(r.Bindings) == 1 {
				got = r.Bindings[0].Node
			}
			if got != tc.want {
				t.Errorf("placed on %q, want %q (status %+v)", got, tc.want, r.PodGroups["ns/one"])
			}
			if tc.want == "" && r.PodGroups["ns/one"].Unschedulable == nil {
				t.Errorf("no reason given")
			}
		})
	}
}

func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	c := func(cpu string) corev1.Container {
		return corev1.Container{Resources: corev1.ResourceRequirements{Requests: res(cpu, "")}}
	}
	sidecar := func(cpu string) corev1.Container {
		ctr := c(cpu)
		ctr.RestartPolicy = &always
		return ctr
	}
	tests := []struct {
		name string
		spec corev1.PodSpec
		cpu  string
	}{
		{"containers add up", corev1.PodSpec{Containers: []corev1.Container{c("1"), c("500m")}}, "1500m"},
		{"a larger init container wins", corev1.PodSpec{Containers: []corev1.Container{c("1")}, InitContainers: []corev1.Container{c("3")}}, "3"},
		{"a smaller init container does not count", corev1.PodSpec{Containers: []corev1.Container{c("2")}, InitContainers: []corev1.Container{c("1")}}, "2"},
		{"sidecars run beside the containers", corev1.PodSpec{Containers: []corev1.Container{c("2")}, InitContainers: []corev1.Container{sidecar("1")}}, "3"},
		{"an init container after a sidecar runs beside it", corev1.PodSpec{Containers: []corev1.Container{c("1")}, InitContainers: []corev1.Container{sidecar("1"), c("3")}}, "4"},
		{"overhead adds", corev1.PodSpec{Containers: []corev1.Container{c("1")}, Overhead: res("250m", "")}, "1250m"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PodRequests(&corev1.Pod{Spec: tc.spec})
			want := resource.MustParse(tc.cpu)
			if q := got[corev1.ResourceCPU]; q.Cmp(want) != 0 {
				t.Errorf("cpu %s, want %s", q.String(), tc.cpu)
			}
		})
	}
}

func TestTaskFromPod(t *testing.T) {
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = "ns", "job-worker-3"
	pod.Annotations = map[string]string{"volcano.sh/task-spec": "worker"}
	pod.Spec.Containers = []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: res("2", "1Gi")}}}
	pod.Spec.NodeSelector = map[string]string{"zone": "a"}
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: affinity([]corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpExists)}),
	}}
	task := TaskFromPod(pod)
	if task.Key != "ns/job-worker-3" || task.Name != "worker" || task.Affinity == nil || task.NodeSelector["zone"] != "a" {
		t.Errorf("task %+v", task)
	}
	if q := task.Requests[corev1.ResourceCPU]; q.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("requests %v", task.Requests)
	}
}
