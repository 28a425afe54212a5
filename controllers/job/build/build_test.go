package build

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// testJob is a Job named "train" in "ns" with a master (1 replica) and a worker (3 replicas) task.
func testJob() *batch.Job {
	return &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ns", UID: types.UID("u-1")},
		Spec: batch.JobSpec{
			SchedulerName: "volcano",
			MinAvailable:  4,
			Queue:         "q1",
			Tasks: []batch.TaskSpec{
				{Name: "master", Replicas: 1, Template: template("m", "1", "1Gi")},
				{Name: "worker", Replicas: 3, Template: template("w", "2", "2Gi")},
			},
		},
		Status: batch.JobStatus{Version: 2, RetryCount: 1},
	}
}

// template is a pod template with one container requesting cpu and memory.
func template(container, cpu, mem string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name:      container,
		Image:     "busybox",
		Resources: requests(cpu, mem),
	}}}}
}

func requests(cpu, mem string) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Requests: corev1.ResourceList{}}
	if cpu != "" {
		r.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		r.Requests[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return r
}

func ptr[T any](v T) *T { return &v }

// list parses "name=quantity" pairs into a ResourceList.
func list(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, p := range pairs {
		name, q, _ := strings.Cut(p, "=")
		out[corev1.ResourceName(name)] = resource.MustParse(q)
	}
	return out
}

// sameResources compares two lists by quantity, not by how the quantities are written.
func sameResources(t *testing.T, got, want corev1.ResourceList) {
	t.Helper()
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("resources:\n got  %v\n want %v", got, want)
	}
}

func TestNames(t *testing.T) {
	job := testJob()
	if got := PodName("train", "worker", 7); got != "train-worker-7" {
		t.Errorf("PodName = %q", got)
	}
	if got := PodGroupName(job); got != "train-u-1" {
		t.Errorf("PodGroupName = %q", got)
	}
	a, b := PVCName(job, 0), PVCName(job, 1)
	if !strings.HasPrefix(a, "train-pvc-") || len(a) != len("train-pvc-")+12 {
		t.Errorf("PVCName = %q, want train-pvc-<12 characters>", a)
	}
	if a == b {
		t.Errorf("PVCName of two volumes is the same: %q", a)
	}
	if again := PVCName(job, 0); again != a {
		t.Errorf("PVCName is not deterministic: %q then %q", a, again)
	}
	other := testJob()
	other.UID = "u-2"
	if PVCName(other, 0) == a {
		t.Errorf("PVCName ignores the Job's UID")
	}
	long := volumeName(strings.Repeat("j", 70), "claim")
	if len(long) != maxVolumeNameLength {
		t.Errorf("volume name of a long job has %d characters, want %d", len(long), maxVolumeNameLength)
	}
}

func TestOwnerReference(t *testing.T) {
	ref := OwnerReference(testJob())
	want := metav1.OwnerReference{
		APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "train", UID: "u-1",
		Controller: ptr(true), BlockOwnerDeletion: ptr(true),
	}
	if !equality.Semantic.DeepEqual(ref, want) {
		t.Errorf("OwnerReference = %+v, want %+v", ref, want)
	}
}
