package build

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/controllers/job/state"
)

// PriorityLookup gives the value of the PriorityClass named className, and false when there is no
// such class. A nil PriorityLookup knows no class.
type PriorityLookup func(className string) (value int32, found bool)

// PodGroup is the PodGroup of job as Volcano's createOrUpdatePodGroup creates it: named
// PodGroupName, carrying the Job's labels and annotations (within PodGroupMetadataBytes each,
// BoundedMetadata), with minMember the Job's minAvailable,
// a minTaskMember per task, the Job's queue and priority class, minResources (MinResources), the
// Job's network topology and a subgroup policy per partitioned task. priorities values the
// priority classes of the task templates.
func PodGroup(job *batch.Job, slot int, priorities PriorityLookup) *scheduling.PodGroup {
	meta := OwnedMeta(job, PodGroupName(job), slot)
	labels, _ := BoundedMetadata(job.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[SlotLabel] = strconv.Itoa(slot)
	meta.Labels = labels
	meta.Annotations, _ = BoundedMetadata(job.Annotations)

	minTaskMember := make(map[string]int32, len(job.Spec.Tasks))
	for i := range job.Spec.Tasks {
		minTaskMember[job.Spec.Tasks[i].Name] = MinTaskMember(&job.Spec.Tasks[i])
	}
	minResources := MinResources(job, priorities)
	return &scheduling.PodGroup{
		ObjectMeta: meta,
		Spec: scheduling.PodGroupSpec{
			MinMember:         job.Spec.MinAvailable,
			MinTaskMember:     minTaskMember,
			Queue:             job.Spec.Queue,
			PriorityClassName: job.Spec.PriorityClassName,
			MinResources:      &minResources,
			NetworkTopology:   networkTopology(job.Spec.NetworkTopology),
			SubGroupPolicy:    subGroupPolicies(job.Spec.Tasks),
		},
	}
}

// MinTaskMember is the number of the task's pods the scheduler must place together: its
// minAvailable, else minPartitions whole partitions, else all its replicas.
func MinTaskMember(task *batch.TaskSpec) int32 {
	if task.MinAvailable != nil {
		return *task.MinAvailable
	}
	if p := task.PartitionPolicy; p != nil && p.MinPartitions != 0 && p.PartitionSize != 0 {
		return state.MulInt32(p.MinPartitions, p.PartitionSize) // saturated: the product of two int32s may not fit one
	}
	return task.Replicas
}

// UpdatePodGroup brings the fields Volcano keeps in step with the Job (priorityClassName,
// minMember, minResources, minTaskMember, subGroupPolicy) from desired into a copy of existing,
// and tells whether any changed. The copy keeps existing's resourceVersion, so that the update
// fails on a concurrent write. The queue, labels, annotations and network topology are set at
// creation only, as in Volcano.
//
// It compares as the API server stores: a field that reads back differently but means the same
// (quantities written another way, a zero or absent resource, nil or empty maps, what the CRD
// defaults) is no change. Every Job reconcile asks, so one spurious difference would be an
// Update per reconcile, each of them waking every PodGroup informer.
func UpdatePodGroup(existing, desired *scheduling.PodGroup) (*scheduling.PodGroup, bool) {
	pg := existing.DeepCopy()
	changed := false
	if pg.Spec.PriorityClassName != desired.Spec.PriorityClassName {
		pg.Spec.PriorityClassName = desired.Spec.PriorityClassName
		changed = true
	}
	if pg.Spec.MinMember != desired.Spec.MinMember || !sameMinResources(pg.Spec.MinResources, desired.Spec.MinResources) {
		pg.Spec.MinMember = desired.Spec.MinMember
		pg.Spec.MinResources = nil
		if desired.Spec.MinResources != nil {
			list := desired.Spec.MinResources.DeepCopy()
			pg.Spec.MinResources = &list
		}
		changed = true
	}
	for task, n := range desired.Spec.MinTaskMember {
		if have, ok := pg.Spec.MinTaskMember[task]; !ok || have != n {
			if pg.Spec.MinTaskMember == nil {
				pg.Spec.MinTaskMember = map[string]int32{}
			}
			pg.Spec.MinTaskMember[task] = n
			changed = true
		}
	}
	if !sameSubGroupPolicies(pg.Spec.SubGroupPolicy, desired.Spec.SubGroupPolicy) {
		pg.Spec.SubGroupPolicy = nil
		for i := range desired.Spec.SubGroupPolicy {
			pg.Spec.SubGroupPolicy = append(pg.Spec.SubGroupPolicy, *desired.Spec.SubGroupPolicy[i].DeepCopy())
		}
		changed = true
	}
	return pg, changed
}

// sameMinResources reports whether two minimums ask the same: none and an empty list are alike,
// and so are a resource at zero and one left out.
func sameMinResources(a, b *corev1.ResourceList) bool {
	var la, lb corev1.ResourceList
	if a != nil {
		la = *a
	}
	if b != nil {
		lb = *b
	}
	for name, q := range la {
		if other := lb[name]; q.Cmp(other) != 0 {
			return false
		}
	}
	for name, q := range lb {
		if _, ok := la[name]; !ok && !q.IsZero() {
			return false
		}
	}
	return true
}

// sameSubGroupPolicies compares subgroup policies as the API server stores them, with the
// CRD's defaults applied to both (subGroupSize 1, minSubGroups 0, network topology mode hard).
func sameSubGroupPolicies(a, b []scheduling.SubGroupPolicySpec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equality.Semantic.DeepEqual(withSubGroupDefaults(a[i]), withSubGroupDefaults(b[i])) {
			return false
		}
	}
	return true
}

func withSubGroupDefaults(sg scheduling.SubGroupPolicySpec) scheduling.SubGroupPolicySpec {
	sg = *sg.DeepCopy()
	if sg.SubGroupSize == nil {
		size := int32(1)
		sg.SubGroupSize = &size
	}
	if sg.MinSubGroups == nil {
		minimum := int32(0)
		sg.MinSubGroups = &minimum
	}
	if sg.NetworkTopology != nil && sg.NetworkTopology.Mode == "" {
		sg.NetworkTopology.Mode = scheduling.HardNetworkTopologyMode
	}
	return sg
}

// MinResources is the least the scheduler must find free to start job: the quota usage (see
// podUsage) of the first pods, by task priority, that make up its minAvailable. Tasks are ordered
// by the value of their template's priority class, highest first (a class priorities does not know
// counts as 0), spec order breaking ties. When minAvailable is below the sum of the tasks'
// minimums, the first minAvailable pods in that order count; otherwise every task counts its
// minAvailable pods, and the rest up to minAvailable is taken from the tasks' remaining replicas,
// highest priority first.
func MinResources(job *batch.Job, priorities PriorityLookup) corev1.ResourceList {
	tasks := byPriority(job.Spec.Tasks, priorities)
	want := job.Spec.MinAvailable
	minimums := make([]int32, len(tasks))
	for i, t := range tasks {
		minimums[i] = t.Replicas
		if t.MinAvailable != nil {
			minimums[i] = *t.MinAvailable
		}
	}
	sumOfMinimums := state.SumInt32(minimums...)
	total := corev1.ResourceList{}
	if want < sumOfMinimums {
		firstPods(total, tasks, want)
	} else {
		minimumsThenRest(total, tasks, want)
	}
	return total
}

// firstPods adds the usage of the first n pods of tasks, in order.
func firstPods(total corev1.ResourceList, tasks []*batch.TaskSpec, n int32) {
	for _, t := range tasks {
		if n <= 0 {
			return
		}
		take := min(n, max(t.Replicas, 0))
		times(total, podUsage(&t.Template.Spec), take)
		n -= take
	}
}

// minimumsThenRest adds each task's minAvailable pods until n pods are counted, then fills up to n
// from the replicas above each task's minimum.
func minimumsThenRest(total corev1.ResourceList, tasks []*batch.TaskSpec, n int32) {
	var counted int32
	for _, t := range tasks {
		if counted >= n {
			return
		}
		if t.MinAvailable == nil {
			continue
		}
		take := min(max(*t.MinAvailable, 0), n-counted)
		times(total, podUsage(&t.Template.Spec), take)
		counted += take
	}
	for _, t := range tasks {
		if counted >= n {
			return
		}
		rest := int64(t.Replicas) // in int64: a negative minimum must not wrap the difference
		if t.MinAvailable != nil {
			rest -= int64(*t.MinAvailable)
		}
		if rest <= 0 {
			continue
		}
		take := int32(min(rest, int64(n-counted)))
		times(total, podUsage(&t.Template.Spec), take)
		counted += take
	}
}

// byPriority orders tasks by the value of their template's priority class, highest first,
// keeping spec order among equals.
func byPriority(tasks []batch.TaskSpec, priorities PriorityLookup) []*batch.TaskSpec {
	type ranked struct {
		task  *batch.TaskSpec
		value int32
	}
	order := make([]ranked, len(tasks))
	for i := range tasks {
		order[i].task = &tasks[i]
		if class := tasks[i].Template.Spec.PriorityClassName; class != "" && priorities != nil {
			if v, ok := priorities(class); ok {
				order[i].value = v
			}
		}
	}
	slices.SortStableFunc(order, func(a, b ranked) int {
		switch {
		case a.value > b.value:
			return -1
		case a.value < b.value:
			return 1
		}
		return 0
	})
	out := make([]*batch.TaskSpec, len(order))
	for i, r := range order {
		out[i] = r.task
	}
	return out
}

// networkTopology is the PodGroup's form of the Job's topology constraint; a tier number, when
// set, wins over a tier name.
func networkTopology(nt *batch.NetworkTopologySpec) *scheduling.NetworkTopologySpec {
	if nt == nil {
		return nil
	}
	out := &scheduling.NetworkTopologySpec{Mode: scheduling.NetworkTopologyMode(nt.Mode)}
	if nt.HighestTierAllowed != nil {
		tier := *nt.HighestTierAllowed
		out.HighestTierAllowed = &tier
	} else {
		out.HighestTierName = nt.HighestTierName
	}
	return out
}

// subGroupPolicies gives each task with a partition policy a subgroup: its pods, grouped by
// partition id, in groups of partitionSize of which minPartitions must fit.
func subGroupPolicies(tasks []batch.TaskSpec) []scheduling.SubGroupPolicySpec {
	var out []scheduling.SubGroupPolicySpec
	for i := range tasks {
		p := tasks[i].PartitionPolicy
		if p == nil {
			continue
		}
		size, minimum := p.PartitionSize, p.MinPartitions
		sg := scheduling.SubGroupPolicySpec{
			Name:           tasks[i].Name,
			SubGroupSize:   &size,
			MinSubGroups:   &minimum,
			LabelSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{batch.TaskSpecKey: tasks[i].Name}},
			MatchLabelKeys: []string{batch.TaskPartitionID},
		}
		if nt := p.NetworkTopology; nt != nil {
			sg.NetworkTopology = &scheduling.NetworkTopologySpec{
				Mode:            scheduling.NetworkTopologyMode(nt.Mode),
				HighestTierName: nt.HighestTierName,
			}
			if nt.HighestTierAllowed != nil {
				tier := *nt.HighestTierAllowed
				sg.NetworkTopology.HighestTierAllowed = &tier
			}
		}
		out = append(out, sg)
	}
	return out
}

// A Job's PodGroup carries the Job's labels and its annotations, as in Volcano, within
// PodGroupMetadataBytes each. The scheduler writes the PodGroup's status whole on each change
// of its phase and conditions, and every watcher of PodGroups keeps it: a Job of 200 KB of
// annotations copied whole made each of those writes a 200 KB PUT (a second each on a loaded
// API server), paid by every tenant. Real Jobs carry a few KiB; the scheduler reads the
// annotations of Volcano's domains, kept first.
const PodGroupMetadataBytes = 16 << 10

// BoundedMetadata returns the entries of m (labels or annotations) whose keys and values fit
// in PodGroupMetadataBytes together: those of Volcano's domains (volcano.sh and its subdomains)
// first, then the others, each group in key order, an entry that does not fit left out. It
// also returns how many entries it left out; m is returned as it is when all fit.
func BoundedMetadata(m map[string]string) (map[string]string, int) {
	total := 0
	for k, v := range m {
		total += len(k) + len(v)
	}
	if total <= PodGroupMetadataBytes {
		return maps.Clone(m), 0
	}
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if va, vb := volcanoDomain(a), volcanoDomain(b); va != vb {
			if va {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	kept, left, used := map[string]string{}, 0, 0
	for _, k := range keys {
		n := len(k) + len(m[k])
		if used+n > PodGroupMetadataBytes {
			left++
			continue
		}
		kept[k] = m[k]
		used += n
	}
	return kept, left
}

// volcanoDomain reports whether key's prefix is volcano.sh or one of its subdomains.
func volcanoDomain(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	return ok && (prefix == "volcano.sh" || strings.HasSuffix(prefix, ".volcano.sh"))
}
