package build

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// quota is the usage of pods pods asking cpu and mem in total, as a quota counts it.
func quota(pods int, cpu, mem string) corev1.ResourceList {
	n := strconv.Itoa(pods)
	return list("count/pods="+n, "pods="+n, "cpu="+cpu, "requests.cpu="+cpu, "memory="+mem, "requests.memory="+mem)
}

func classes(values map[string]int32) PriorityLookup {
	return func(name string) (int32, bool) { v, ok := values[name]; return v, ok }
}

func TestMinResources(t *testing.T) {
	for _, tc := range []struct {
		name       string
		edit       func(*batch.Job)
		priorities PriorityLookup
		want       corev1.ResourceList
	}{
		{
			name: "minAvailable covers every replica",
			want: quota(4, "7", "7Gi"), // 1×(1, 1Gi) + 3×(2, 2Gi)
		},
		{
			name: "first minAvailable pods in spec order when priorities are equal",
			edit: func(j *batch.Job) { j.Spec.MinAvailable = 2 },
			want: quota(2, "3", "3Gi"), // the master and one worker
		},
		{
			name: "higher priority task first",
			edit: func(j *batch.Job) {
				j.Spec.MinAvailable = 2
				j.Spec.Tasks[1].Template.Spec.PriorityClassName = "high"
			},
			priorities: classes(map[string]int32{"high": 100}),
			want:       quota(2, "4", "4Gi"), // two workers
		},
		{
			name: "unknown priority class counts as zero",
			edit: func(j *batch.Job) {
				j.Spec.MinAvailable = 2
				j.Spec.Tasks[0].Replicas = 2
				j.Spec.Tasks[0].Template.Spec.PriorityClassName = "gone"
				j.Spec.Tasks[1].Template.Spec.PriorityClassName = "low"
			},
			priorities: classes(map[string]int32{"low": -5}),
			want:       quota(2, "2", "2Gi"), // both masters (0) before any worker (-5)
		},
		{
			name: "task minimums first, then the rest up to minAvailable",
			edit: func(j *batch.Job) {
				j.Spec.MinAvailable = 5
				j.Spec.Tasks[0].Replicas, j.Spec.Tasks[0].MinAvailable = 2, ptr(int32(1))
				j.Spec.Tasks[1].Replicas, j.Spec.Tasks[1].MinAvailable = 4, ptr(int32(2))
			},
			// minimums: 1 master + 2 workers; rest: the second master, then one more worker.
			want: quota(5, "8", "8Gi"),
		},
		{
			name: "minAvailable below the sum of task minimums takes the first pods",
			edit: func(j *batch.Job) {
				j.Spec.MinAvailable = 2
				j.Spec.Tasks[0].MinAvailable = ptr(int32(1))
				j.Spec.Tasks[1].MinAvailable = ptr(int32(3))
			},
			want: quota(2, "3", "3Gi"),
		},
		{
			name: "minAvailable zero",
			edit: func(j *batch.Job) { j.Spec.MinAvailable = 0 },
			want: corev1.ResourceList{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testJob()
			if tc.edit != nil {
				tc.edit(job)
			}
			sameResources(t, MinResources(job, tc.priorities), tc.want)
		})
	}
}

func TestPodUsage(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	withLimits := func(r corev1.ResourceRequirements, pairs ...string) corev1.ResourceRequirements {
		r.Limits = list(pairs...)
		return r
	}
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want corev1.ResourceList
	}{
		{
			name: "containers add up",
			spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: requests("1", "1Gi")}, {Resources: requests("500m", "")}}},
			want: quota(1, "1500m", "1Gi"),
		},
		{
			name: "an init container bigger than the containers sets the request",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Resources: requests("3", "")}},
				Containers:     []corev1.Container{{Resources: requests("1", "1Gi")}},
			},
			want: quota(1, "3", "1Gi"),
		},
		{
			name: "a sidecar runs beside the containers and the init containers after it",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{
					{Resources: requests("1", ""), RestartPolicy: &always},
					{Resources: requests("1500m", "")},
				},
				Containers: []corev1.Container{{Resources: requests("1", "1Gi")}},
			},
			want: quota(1, "2500m", "1Gi"), // max(1+1, 1.5+1)
		},
		{
			name: "overhead is added to requests, and to limits that are set",
			spec: corev1.PodSpec{
				Overhead:   list("cpu=250m", "memory=100Mi"),
				Containers: []corev1.Container{{Resources: withLimits(requests("1", "1Gi"), "cpu=2")}},
			},
			want: list("count/pods=1", "pods=1", "cpu=1250m", "requests.cpu=1250m", "limits.cpu=2250m",
				"memory=1124Mi", "requests.memory=1124Mi"),
		},
		{
			name: "extended resources and hugepages",
			spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
				Requests: list("nvidia.com/gpu=2", "hugepages-2Mi=4Mi", "example.kubernetes.io/native=1"),
			}}}},
			want: list("count/pods=1", "pods=1", "nvidia.com/gpu=2", "requests.nvidia.com/gpu=2",
				"hugepages-2Mi=4Mi", "requests.hugepages-2Mi=4Mi"),
		},
		{
			name: "limits and ephemeral storage",
			spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
				Requests: list("ephemeral-storage=1Gi"),
				Limits:   list("cpu=1", "memory=2Gi", "ephemeral-storage=2Gi"),
			}}}},
			want: list("count/pods=1", "pods=1", "ephemeral-storage=1Gi", "requests.ephemeral-storage=1Gi",
				"limits.ephemeral-storage=2Gi", "limits.cpu=1", "limits.memory=2Gi"),
		},
		{
			name: "pod-level requests replace the containers' cpu and memory",
			spec: corev1.PodSpec{
				Resources:  &corev1.ResourceRequirements{Requests: list("cpu=4"), Limits: list("memory=8Gi")},
				Containers: []corev1.Container{{Resources: withLimits(requests("1", "1Gi"), "memory=2Gi")}},
			},
			want: list("count/pods=1", "pods=1", "cpu=4", "requests.cpu=4", "memory=1Gi", "requests.memory=1Gi",
				"limits.memory=8Gi"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sameResources(t, podUsage(&tc.spec), tc.want)
		})
	}
}

func TestPodGroup(t *testing.T) {
	job := testJob()
	job.Labels = map[string]string{"team": "a"}
	job.Annotations = map[string]string{"volcano.sh/sla-waiting-time": "1h"}
	job.Spec.PriorityClassName = "high"
	job.Spec.Tasks[1].MinAvailable = ptr(int32(2))
	job.Spec.NetworkTopology = &batch.NetworkTopologySpec{Mode: batch.HardNetworkTopologyMode, HighestTierAllowed: ptr(2), HighestTierName: "ignored"}
	pg := PodGroup(job, 42, nil)

	if pg.Name != "train-u-1" || pg.Namespace != "ns" {
		t.Errorf("PodGroup %s/%s, want ns/train-u-1", pg.Namespace, pg.Name)
	}
	if len(pg.OwnerReferences) != 1 || !equality.Semantic.DeepEqual(pg.OwnerReferences[0], OwnerReference(job)) {
		t.Errorf("owner references %+v", pg.OwnerReferences)
	}
	if want := map[string]string{"team": "a", SlotLabel: "42"}; !maps.Equal(pg.Labels, want) {
		t.Errorf("labels %v, want %v", pg.Labels, want)
	}
	if !maps.Equal(pg.Annotations, job.Annotations) {
		t.Errorf("annotations %v, want the Job's %v", pg.Annotations, job.Annotations)
	}
	if _, ok := job.Labels[SlotLabel]; ok {
		t.Errorf("PodGroup wrote into the Job's labels")
	}
	s := pg.Spec
	if s.MinMember != 4 || s.Queue != "q1" || s.PriorityClassName != "high" {
		t.Errorf("minMember %d queue %q priorityClassName %q", s.MinMember, s.Queue, s.PriorityClassName)
	}
	if want := map[string]int32{"master": 1, "worker": 2}; !maps.Equal(s.MinTaskMember, want) {
		t.Errorf("minTaskMember %v, want %v", s.MinTaskMember, want)
	}
	if s.MinResources == nil {
		t.Fatal("no minResources")
	}
	sameResources(t, *s.MinResources, MinResources(job, nil))
	wantNT := &scheduling.NetworkTopologySpec{Mode: scheduling.HardNetworkTopologyMode, HighestTierAllowed: ptr(2)}
	if !equality.Semantic.DeepEqual(s.NetworkTopology, wantNT) {
		t.Errorf("networkTopology %+v, want %+v", s.NetworkTopology, wantNT)
	}
	if s.SubGroupPolicy != nil {
		t.Errorf("subGroupPolicy %+v without partitioned tasks", s.SubGroupPolicy)
	}
}

// A Job's labels and annotations reach its PodGroup within PodGroupMetadataBytes each: all of
// them when they fit (as in Volcano), else Volcano's domains first and as many of the others as
// fit, in key order; a tenant's 200 KB of annotations is not copied into every status write.
func TestPodGroupMetadataIsBounded(t *testing.T) {
	job := testJob()
	big := strings.Repeat("x", 50<<10)
	job.Annotations = map[string]string{
		"a/huge":                      big,
		"b/small":                     "1",
		"volcano.sh/sla-waiting-time": "1h",
		"scheduling.volcano.sh/queue": "q",
		"notvolcano.sh/x":             "y",
		"z/last":                      strings.Repeat("z", PodGroupMetadataBytes),
	}
	job.Labels = map[string]string{"a-team": "a"}
	for i := range 400 {
		job.Labels[fmt.Sprintf("l%04d", i)] = strings.Repeat("v", 60)
	}
	pg := PodGroup(job, 7, nil)
	want := map[string]string{"b/small": "1", "volcano.sh/sla-waiting-time": "1h", "scheduling.volcano.sh/queue": "q", "notvolcano.sh/x": "y"}
	if !maps.Equal(pg.Annotations, want) {
		t.Errorf("annotations %v, want %v", keysOf(pg.Annotations), keysOf(want))
	}
	if n := metadataBytes(pg.Labels); n > PodGroupMetadataBytes+len(SlotLabel)+3 {
		t.Errorf("labels of %d bytes, want at most %d and the slot label", n, PodGroupMetadataBytes)
	}
	if pg.Labels[SlotLabel] != "7" || pg.Labels["a-team"] != "a" || pg.Labels["l0000"] == "" || pg.Labels["l0399"] != "" {
		t.Errorf("labels lost the slot label, or kept later keys before earlier ones: %v", keysOf(pg.Labels)[:3])
	}
	if _, left := BoundedMetadata(job.Annotations); left != 2 {
		t.Errorf("BoundedMetadata left out %d annotations, want 2 (a/huge, z/last)", left)
	}

	small := map[string]string{"k": "v"}
	if got, left := BoundedMetadata(small); !maps.Equal(got, small) || left != 0 {
		t.Errorf("BoundedMetadata(%v) = %v, %d left out", small, got, left)
	}
	if got, left := BoundedMetadata(nil); got != nil || left != 0 {
		t.Errorf("BoundedMetadata(nil) = %v, %d", got, left)
	}
}

func keysOf(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

func metadataBytes(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

func TestPodGroupPartitions(t *testing.T) {
	job := testJob()
	job.Spec.Tasks[1].PartitionPolicy = &batch.PartitionPolicySpec{
		TotalPartitions: 3, PartitionSize: 2, MinPartitions: 1,
		NetworkTopology: &batch.NetworkTopologySpec{Mode: batch.SoftNetworkTopologyMode, HighestTierName: "rack"},
	}
	pg := PodGroup(job, 0, nil)
	want := []scheduling.SubGroupPolicySpec{{
		Name:           "worker",
		SubGroupSize:   ptr(int32(2)),
		MinSubGroups:   ptr(int32(1)),
		LabelSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{"volcano.sh/task-spec": "worker"}},
		MatchLabelKeys: []string{"volcano.sh/partition-id"},
		NetworkTopology: &scheduling.NetworkTopologySpec{
			Mode: scheduling.SoftNetworkTopologyMode, HighestTierName: "rack",
		},
	}}
	if !equality.Semantic.DeepEqual(pg.Spec.SubGroupPolicy, want) {
		t.Errorf("subGroupPolicy:\n got  %+v\n want %+v", pg.Spec.SubGroupPolicy, want)
	}
	// Without minAvailable, a partitioned task needs minPartitions whole partitions.
	if got := pg.Spec.MinTaskMember["worker"]; got != 2 {
		t.Errorf("minTaskMember[worker] = %d, want 1 partition of 2", got)
	}
}

func TestMinTaskMember(t *testing.T) {
	for _, tc := range []struct {
		name string
		task batch.TaskSpec
		want int32
	}{
		{"minAvailable", batch.TaskSpec{Replicas: 5, MinAvailable: ptr(int32(3))}, 3},
		{"replicas", batch.TaskSpec{Replicas: 5}, 5},
		{"partitions", batch.TaskSpec{Replicas: 8, PartitionPolicy: &batch.PartitionPolicySpec{PartitionSize: 4, MinPartitions: 1}}, 4},
		{"partitions without a minimum", batch.TaskSpec{Replicas: 8, PartitionPolicy: &batch.PartitionPolicySpec{PartitionSize: 4}}, 8},
		{"minAvailable wins over partitions", batch.TaskSpec{Replicas: 8, MinAvailable: ptr(int32(6)),
			PartitionPolicy: &batch.PartitionPolicySpec{PartitionSize: 4, MinPartitions: 1}}, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MinTaskMember(&tc.task); got != tc.want {
				t.Errorf("MinTaskMember = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestUpdatePodGroup(t *testing.T) {
	existing := func() *scheduling.PodGroup {
		pg := PodGroup(testJob(), 3, nil)
		pg.ResourceVersion = "77"
		pg.Status.Phase = scheduling.PodGroupInqueue
		return pg
	}
	for _, tc := range []struct {
		name    string
		job     func(*batch.Job)
		pg      func(*scheduling.PodGroup)
		changed bool
	}{
		{name: "in step"},
		{
			name: "same quantities written differently",
			pg: func(pg *scheduling.PodGroup) {
				(*pg.Spec.MinResources)[corev1.ResourceCPU] = resource.MustParse("7000m")
			},
		},
		{name: "scale up", job: func(j *batch.Job) { j.Spec.Tasks[1].Replicas = 5; j.Spec.MinAvailable = 6 }, changed: true},
		{name: "task minimum", job: func(j *batch.Job) { j.Spec.Tasks[1].MinAvailable = ptr(int32(1)) }, changed: true},
		{name: "priority class", job: func(j *batch.Job) { j.Spec.PriorityClassName = "p" }, changed: true},
		{name: "minTaskMember missing", pg: func(pg *scheduling.PodGroup) { pg.Spec.MinTaskMember = nil }, changed: true},
		{
			name: "partition policy added",
			job: func(j *batch.Job) {
				j.Spec.Tasks[1].PartitionPolicy = &batch.PartitionPolicySpec{PartitionSize: 1, MinPartitions: 3}
			},
			changed: true,
		},
		{name: "queue is set at creation only", job: func(j *batch.Job) { j.Spec.Queue = "other" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testJob()
			if tc.job != nil {
				tc.job(job)
			}
			have := existing()
			if tc.pg != nil {
				tc.pg(have)
			}
			before := have.DeepCopy()
			desired := PodGroup(job, 3, nil)
			got, changed := UpdatePodGroup(have, desired)
			if changed != tc.changed {
				t.Fatalf("changed = %v, want %v", changed, tc.changed)
			}
			if !equality.Semantic.DeepEqual(have, before) {
				t.Errorf("UpdatePodGroup changed the existing PodGroup")
			}
			if got.ResourceVersion != "77" || got.Status.Phase != scheduling.PodGroupInqueue || got.Spec.Queue != "q1" {
				t.Errorf("lost what it must keep: resourceVersion %q phase %q queue %q", got.ResourceVersion, got.Status.Phase, got.Spec.Queue)
			}
			if !changed {
				return
			}
			d := desired.Spec
			g := got.Spec
			if g.MinMember != d.MinMember || g.PriorityClassName != d.PriorityClassName ||
				!maps.Equal(g.MinTaskMember, d.MinTaskMember) ||
				!equality.Semantic.DeepEqual(g.MinResources, d.MinResources) ||
				!equality.Semantic.DeepEqual(g.SubGroupPolicy, d.SubGroupPolicy) {
				t.Errorf("updated spec %+v, want the fields of %+v", g, d)
			}
		})
	}
}

// TestUpdatePodGroupSeesNoChangeInWhatReadsBackAlike: a PodGroup as the API server returns it
// asks for no update when it means what the Job asks, however it is written.
func TestUpdatePodGroupSeesNoChangeInWhatReadsBackAlike(t *testing.T) {
	partitioned := func(j *batch.Job) {
		j.Spec.Tasks[1].PartitionPolicy = &batch.PartitionPolicySpec{PartitionSize: 1, MinPartitions: 3,
			NetworkTopology: &batch.NetworkTopologySpec{HighestTierAllowed: ptr(2)}}
	}
	for _, tc := range []struct {
		name    string
		job     func(*batch.Job)
		stored  func(pg *scheduling.PodGroup) // what the API server made of the PodGroup
		desired func(pg *scheduling.PodGroup)
		changed bool
	}{
		{name: "read back through JSON"},
		{name: "a Job of no minimum, read back through JSON", job: func(j *batch.Job) { j.Spec.MinAvailable = 0 }},
		{name: "a partitioned Job, read back through JSON", job: partitioned},
		{
			name:    "minTaskMember absent, none asked",
			stored:  func(pg *scheduling.PodGroup) { pg.Spec.MinTaskMember = nil },
			desired: func(pg *scheduling.PodGroup) { pg.Spec.MinTaskMember = map[string]int32{} },
		},
		{
			name:    "minResources absent, an empty one asked",
			job:     func(j *batch.Job) { j.Spec.MinAvailable = 0 },
			stored:  func(pg *scheduling.PodGroup) { pg.Spec.MinResources = nil },
			desired: func(pg *scheduling.PodGroup) { pg.Spec.MinResources = &corev1.ResourceList{} },
		},
		{
			name:   "a resource at zero",
			stored: func(pg *scheduling.PodGroup) { (*pg.Spec.MinResources)["nvidia.com/gpu"] = resource.MustParse("0") },
		},
		{
			name: "quantities in other units",
			stored: func(pg *scheduling.PodGroup) {
				(*pg.Spec.MinResources)[corev1.ResourceCPU] = resource.MustParse("7000m")
				(*pg.Spec.MinResources)[corev1.ResourceMemory] = resource.MustParse("7516192768")
			},
		},
		{
			name: "the CRD's subgroup defaults",
			job:  partitioned,
			stored: func(pg *scheduling.PodGroup) {
				pg.Spec.SubGroupPolicy[0].NetworkTopology.Mode = scheduling.HardNetworkTopologyMode
				pg.Spec.SubGroupPolicy[0].LabelSelector.MatchExpressions = []metav1.LabelSelectorRequirement{}
			},
		},
		{
			name:    "a resource at zero that the Job now asks",
			stored:  func(pg *scheduling.PodGroup) { (*pg.Spec.MinResources)["nvidia.com/gpu"] = resource.MustParse("0") },
			desired: func(pg *scheduling.PodGroup) { (*pg.Spec.MinResources)["nvidia.com/gpu"] = resource.MustParse("1") },
			changed: true,
		},
		{
			name:    "a subgroup size that is not the default",
			job:     partitioned,
			stored:  func(pg *scheduling.PodGroup) { pg.Spec.SubGroupPolicy[0].SubGroupSize = nil },
			desired: func(pg *scheduling.PodGroup) { pg.Spec.SubGroupPolicy[0].SubGroupSize = ptr(int32(2)) },
			changed: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testJob()
			if tc.job != nil {
				tc.job(job)
			}
			desired := PodGroup(job, 3, nil)
			stored := roundTrip(t, desired)
			if tc.stored != nil {
				tc.stored(stored)
			}
			if tc.desired != nil {
				tc.desired(desired)
			}
			if _, changed := UpdatePodGroup(stored, desired); changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
		})
	}
}

// roundTrip is pg as a client reads it back: encoded to JSON and decoded.
func roundTrip(t *testing.T, pg *scheduling.PodGroup) *scheduling.PodGroup {
	t.Helper()
	data, err := json.Marshal(pg)
	if err != nil {
		t.Fatal(err)
	}
	var out scheduling.PodGroup
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func TestPVC(t *testing.T) {
	claim := &corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: list("storage=1Gi")},
	}
	job := testJob()
	job.Spec.Volumes = []batch.VolumeSpec{
		{MountPath: "/a", VolumeClaim: claim},
		{MountPath: "/b", VolumeClaimName: "mine", VolumeClaim: claim},
		{MountPath: "/c"},
	}
	pvc := PVC(job, 0, 9)
	if pvc == nil {
		t.Fatal("no claim for a volume with a claim spec and no name")
	}
	if pvc.Name != PVCName(job, 0) || pvc.Namespace != "ns" || pvc.Labels[SlotLabel] != "9" {
		t.Errorf("claim %s/%s labels %v", pvc.Namespace, pvc.Name, pvc.Labels)
	}
	if len(pvc.OwnerReferences) != 1 || !equality.Semantic.DeepEqual(pvc.OwnerReferences[0], OwnerReference(job)) {
		t.Errorf("owner references %+v", pvc.OwnerReferences)
	}
	if !equality.Semantic.DeepEqual(pvc.Spec, *claim) {
		t.Errorf("spec %+v, want %+v", pvc.Spec, *claim)
	}
	for _, index := range []int{1, 2, 3, -1} {
		if got := PVC(job, index, 9); got != nil {
			t.Errorf("PVC(%d) = %s, want none", index, got.Name)
		}
	}
	for index, want := range []string{PVCName(job, 0), "mine", PVCName(job, 2), ""} {
		if got := ClaimName(job, index); got != want {
			t.Errorf("ClaimName(%d) = %q, want %q", index, got, want)
		}
	}
}
