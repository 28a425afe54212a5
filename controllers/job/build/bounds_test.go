package build

import (
	"math"
	"math/big"
	"testing"

	"gopkg.in/inf.v0"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// TestMinResourcesByMultiplication checks that a task's pods are counted by multiplying one
// pod's usage, exactly, for any number of replicas.
func TestMinResourcesByMultiplication(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas int32
		cpu, mem string
		want     corev1.ResourceList
	}{
		{"one", 1, "250m", "1Gi", quota(1, "250m", "1Gi")},
		{"ten thousand", 10000, "250m", "1Gi", quota(10000, "2500", "10000Gi")},
		{"the largest int32", math.MaxInt32, "1", "1Mi", quota(math.MaxInt32, "2147483647", "2147483647Mi")},
		// 4Ei × (2^31-1) does not fit the int64 a Quantity keeps: the product is taken exactly
		// all the same, not wrapped.
		{"beyond int64", math.MaxInt32, "1", "4Ei", beyondInt64()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testJob()
			job.Spec.Tasks = []batch.TaskSpec{{Name: "w", Replicas: tc.replicas, Template: template("w", tc.cpu, tc.mem)}}
			job.Spec.MinAvailable = tc.replicas
			sameResources(t, MinResources(job, nil), tc.want)
		})
	}
}

// beyondInt64 is the usage of 2^31-1 pods of 1 cpu and 4Ei (2^62 bytes) of memory.
func beyondInt64() corev1.ResourceList {
	usage := quota(math.MaxInt32, "2147483647", "1")
	bytes := new(big.Int).Mul(big.NewInt(1<<62), big.NewInt(math.MaxInt32))
	mem := *resource.NewDecimalQuantity(*inf.NewDecBig(bytes, 0), resource.BinarySI)
	usage[corev1.ResourceMemory], usage[corev1.ResourceRequestsMemory] = mem, mem
	return usage
}

// TestPoisonPodGroupIsCheap builds the PodGroup of a Job of 2147483647 replicas, and of one of
// 1, and checks that the first costs no more allocations than the second: nothing is sized by
// the replicas.
func TestPoisonPodGroupIsCheap(t *testing.T) {
	build := func(replicas int32) func() {
		job := testJob()
		job.Spec.Tasks[0].Replicas, job.Spec.Tasks[1].Replicas = replicas, replicas
		job.Spec.MinAvailable = math.MaxInt32
		job.Spec.Tasks[1].PartitionPolicy = &batch.PartitionPolicySpec{
			TotalPartitions: math.MaxInt32, PartitionSize: math.MaxInt32, MinPartitions: math.MaxInt32,
		}
		return func() {
			pg := PodGroup(job, 3, nil)
			if pg.Spec.MinTaskMember["worker"] < 0 {
				t.Fatalf("minTaskMember wrapped: %d", pg.Spec.MinTaskMember["worker"])
			}
		}
	}
	small := testing.AllocsPerRun(10, build(1))
	poison := testing.AllocsPerRun(10, build(math.MaxInt32))
	t.Logf("allocations per PodGroup: %v for 1 replica a task, %v for 2147483647", small, poison)
	if poison > small*2 {
		t.Errorf("the PodGroup of 2147483647 replicas a task allocates %v times, of 1 replica %v", poison, small)
	}
}

func TestMinTaskMemberSaturates(t *testing.T) {
	task := &batch.TaskSpec{Replicas: 4, PartitionPolicy: &batch.PartitionPolicySpec{
		PartitionSize: 1 << 20, MinPartitions: 1 << 20,
	}}
	if got := MinTaskMember(task); got != math.MaxInt32 {
		t.Errorf("MinTaskMember = %d, want %d (saturated)", got, math.MaxInt32)
	}
}

func TestIsPodOf(t *testing.T) {
	task := &batch.TaskSpec{Name: "worker", Replicas: 3}
	for name, want := range map[string]bool{
		"train-worker-0":   true,
		"train-worker-2":   true,
		"train-worker-3":   false, // beyond the replicas: surplus
		"train-worker-02":  false, // not a name PodName makes
		"train-worker--1":  false,
		"train-worker-":    false,
		"train-worker-x":   false,
		"train-master-0":   false,
		"other-worker-0":   false,
		"train-worker-1-0": false,
	} {
		if got := IsPodOf("train", task, name); got != want {
			t.Errorf("IsPodOf(%q) = %v, want %v", name, got, want)
		}
	}
}

func BenchmarkMinResources(b *testing.B) {
	for _, replicas := range []int32{1, 10000, math.MaxInt32} {
		b.Run(resource.NewQuantity(int64(replicas), resource.DecimalSI).String(), func(b *testing.B) {
			job := testJob()
			job.Spec.Tasks[1].Replicas = replicas
			job.Spec.MinAvailable = replicas
			b.ReportAllocs()
			for b.Loop() {
				MinResources(job, nil)
			}
		})
	}
}
