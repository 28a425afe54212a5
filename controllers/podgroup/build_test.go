package podgroup

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// barePod is a pending pod of the volcano scheduler with one container's requests.
func barePod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pod-uid"},
		Spec: corev1.PodSpec{
			SchedulerName: "volcano",
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
			}}}},
		},
	}
	for _, m := range mutate {
		m(pod)
	}
	return pod
}

func controlledBy(apiVersion, kind, name, uid string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
			APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("owner-" + uid), Controller: ptr.To(true),
		})
	}
}

func TestSkip(t *testing.T) {
	served := []string{"volcano", "gang"}
	rows := []struct {
		name string
		pod  *corev1.Pod
		skip bool
	}{
		{"bare pod of volcano", barePod(), false},
		{"bare pod of a second served scheduler", barePod(func(p *corev1.Pod) { p.Spec.SchedulerName = "gang" }), false},
		{"pod of a ReplicaSet", barePod(controlledBy("apps/v1", "ReplicaSet", "rs", "rs")), false},
		{"pod of a batch/v1 Job", barePod(controlledBy("batch/v1", "Job", "j", "j")), false},
		{"default scheduler", barePod(func(p *corev1.Pod) { p.Spec.SchedulerName = "default-scheduler" }), true},
		{"already annotated", barePod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{scheduling.KubeGroupNameAnnotationKey: "pg"}
		}), true},
		{"empty annotation still needs one", barePod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{scheduling.KubeGroupNameAnnotationKey: ""}
		}), false},
		{"being deleted", barePod(func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }), true},
		{"bound", barePod(func(p *corev1.Pod) { p.Spec.NodeName = "n1" }), true},
		{"controlled by a Volcano Job", barePod(controlledBy("batch.volcano.sh/v1alpha1", "Job", "vj", "vj")), true},
	}
	for _, r := range rows {
		if got := Skip(r.pod, served) != ""; got != r.skip {
			t.Errorf("%s: skip=%v (%q), want %v", r.name, got, Skip(r.pod, served), r.skip)
		}
	}
}

func TestBuild(t *testing.T) {
	podRef := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "pod-uid",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	usage := func(cpu, mem string, pods int64) *corev1.ResourceList {
		return &corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceRequestsCPU: resource.MustParse(cpu),
			corev1.ResourceMemory: resource.MustParse(mem), corev1.ResourceRequestsMemory: resource.MustParse(mem),
			corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI), "count/pods": *resource.NewQuantity(pods, resource.DecimalSI),
		}
	}
	rows := []struct {
		name   string
		pod    *corev1.Pod
		owners map[string]string
		check  func(t *testing.T, pg *scheduling.PodGroup)
	}{
		{"bare pod", barePod(), nil, func(t *testing.T, pg *scheduling.PodGroup) {
			if pg.Name != "podgroup-pod-uid" || pg.Namespace != "ns" {
				t.Errorf("name %s/%s", pg.Namespace, pg.Name)
			}
			if !reflect.DeepEqual(pg.OwnerReferences, []metav1.OwnerReference{podRef}) {
				t.Errorf("owners %+v", pg.OwnerReferences)
			}
			if pg.Spec.MinMember != 1 || pg.Spec.Queue != "default" || pg.Labels["ringfire.io/slot"] != "7" {
				t.Errorf("minMember %d queue %q labels %v", pg.Spec.MinMember, pg.Spec.Queue, pg.Labels)
			}
			if pg.Spec.NetworkTopology != nil || pg.Status.Phase != scheduling.PodGroupPending {
				t.Errorf("topology %+v phase %q", pg.Spec.NetworkTopology, pg.Status.Phase)
			}
			sameResources(t, *pg.Spec.MinResources, *usage("250m", "64Mi", 1))
		}},
		{"queue, priority class, preemption and budget hints", barePod(func(p *corev1.Pod) {
			p.Spec.PriorityClassName = "high"
			p.Annotations = map[string]string{
				scheduling.QueueNameAnnotationKey: "team-a", scheduling.PodPreemptable: "true",
				scheduling.CooldownTime: "60s", scheduling.RevocableZone: "*",
				scheduling.JDBMinAvailable: "1", scheduling.JDBMaxUnavailable: "2", "other": "x",
			}
			p.Labels = map[string]string{scheduling.PodPreemptable: "false", "app": "a"}
		}), nil, func(t *testing.T, pg *scheduling.PodGroup) {
			if pg.Spec.Queue != "team-a" || pg.Spec.PriorityClassName != "high" {
				t.Errorf("queue %q priority %q", pg.Spec.Queue, pg.Spec.PriorityClassName)
			}
			want := map[string]string{scheduling.PodPreemptable: "true", scheduling.CooldownTime: "60s",
				scheduling.RevocableZone: "*", scheduling.JDBMinAvailable: "1"}
			if !reflect.DeepEqual(pg.Annotations, want) {
				t.Errorf("annotations %v, want %v", pg.Annotations, want)
			}
			if pg.Labels[scheduling.PodPreemptable] != "false" || pg.Labels["app"] != "" {
				t.Errorf("labels %v", pg.Labels)
			}
		}},
		{"pod of a ReplicaSet: named and owned by it, owner annotations and min member", barePod(
			controlledBy("apps/v1", "ReplicaSet", "rs", "rs"),
			func(p *corev1.Pod) {
				p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm"})
			},
		), map[string]string{
			scheduling.VolcanoGroupMinMemberAnnotationKey: "3", "volcano.sh/custom": "v", "example.com/x": "y",
		}, func(t *testing.T, pg *scheduling.PodGroup) {
			if pg.Name != "podgroup-owner-rs" || len(pg.OwnerReferences) != 2 || pg.OwnerReferences[0].Kind != "ReplicaSet" {
				t.Errorf("name %s owners %+v", pg.Name, pg.OwnerReferences)
			}
			if pg.Spec.MinMember != 3 || pg.Annotations["volcano.sh/custom"] != "v" || pg.Annotations["example.com/x"] != "" {
				t.Errorf("minMember %d annotations %v", pg.Spec.MinMember, pg.Annotations)
			}
			sameResources(t, *pg.Spec.MinResources, *usage("750m", "192Mi", 3))
		}},
		{"a min member that is no number counts 1", barePod(), map[string]string{
			scheduling.VolcanoGroupMinMemberAnnotationKey: "lots"}, func(t *testing.T, pg *scheduling.PodGroup) {
			if pg.Spec.MinMember != 1 {
				t.Errorf("minMember %d", pg.Spec.MinMember)
			}
		}},
		{"a negative min member counts 1", barePod(), map[string]string{
			scheduling.VolcanoGroupMinMemberAnnotationKey: "-2"}, func(t *testing.T, pg *scheduling.PodGroup) {
			if pg.Spec.MinMember != 1 {
				t.Errorf("minMember %d", pg.Spec.MinMember)
			}
		}},
		{"network topology soft with tier", barePod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{"volcano.sh/network-topology-mode": "Soft", "volcano.sh/network-topology-highest-tier": "2"}
		}), nil, func(t *testing.T, pg *scheduling.PodGroup) {
			nt := pg.Spec.NetworkTopology
			if nt == nil || nt.Mode != scheduling.SoftNetworkTopologyMode || nt.HighestTierAllowed == nil || *nt.HighestTierAllowed != 2 {
				t.Errorf("topology %+v", nt)
			}
		}},
		{"network topology: an unknown mode is hard, a bad tier unset", barePod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{"volcano.sh/network-topology-mode": "fuzzy", "volcano.sh/network-topology-highest-tier": "top"}
		}), nil, func(t *testing.T, pg *scheduling.PodGroup) {
			nt := pg.Spec.NetworkTopology
			if nt == nil || nt.Mode != scheduling.HardNetworkTopologyMode || nt.HighestTierAllowed != nil {
				t.Errorf("topology %+v", nt)
			}
		}},
		{"init containers and overhead count as the quota counts them", barePod(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"),
			}}}}
			p.Spec.Overhead = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")}
		}), nil, func(t *testing.T, pg *scheduling.PodGroup) {
			sameResources(t, *pg.Spec.MinResources, *usage("1", "80Mi", 1))
		}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			r.check(t, Build(r.pod, 7, r.owners))
		})
	}
}

func sameResources(t *testing.T, got, want corev1.ResourceList) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("resources %v, want %v", got, want)
		return
	}
	for name, q := range want {
		if g, ok := got[name]; !ok || g.Cmp(q) != 0 {
			t.Errorf("resource %s = %v, want %v (all: %v)", name, got[name], q, got)
		}
	}
}

func TestPodSelector(t *testing.T) {
	o := podSelector("volcano", metav1.ListOptions{ResourceVersion: "5"})
	if o.FieldSelector != "spec.nodeName=,spec.schedulerName=volcano" && o.FieldSelector != "spec.schedulerName=volcano,spec.nodeName=" {
		t.Errorf("field selector %q", o.FieldSelector)
	}
	if o.LabelSelector != "!volcano.sh/job-name" || o.ResourceVersion != "5" {
		t.Errorf("label selector %q, resourceVersion %q", o.LabelSelector, o.ResourceVersion)
	}
}

// A gang larger than a Job may be is refused with a message naming the annotation; the
// PodGroup of one at the limit is built by multiplication, whatever the number.
func TestMinMemberTooLarge(t *testing.T) {
	key := scheduling.VolcanoGroupMinMemberAnnotationKey
	for _, tc := range []struct {
		value string
		want  string // part of the message; "" for none
	}{
		{"", ""},
		{"3", ""},
		{"10000", ""},
		{"10001", "its owner's annotation scheduling.volcano.sh/group-min-member asks for a gang of 10001 pods; ringfire runs at most 10000: lower it on the owner, then re-create the pod (docs/jobs.md, Limits)"},
		{"2147483647", "a gang of 2147483647 pods"},
		{"2147483648", ""}, // not an int32: read as 1, as Volcano does
		{"lots", ""},
	} {
		owners := map[string]string{}
		if tc.value != "" {
			owners[key] = tc.value
		}
		got := MinMemberTooLarge(owners)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%q: MinMemberTooLarge = %q, want %q", tc.value, got, tc.want)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	allocs := testing.AllocsPerRun(10, func() { Build(pod, 0, map[string]string{key: "2147483647"}) })
	if allocs > 200 {
		t.Errorf("the PodGroup of a gang of 2147483647 took %v allocations", allocs)
	}
	pg := Build(pod, 0, map[string]string{key: "10000"})
	if cpu := (*pg.Spec.MinResources)[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("1000")) != 0 {
		t.Errorf("minResources cpu %s, want 1000 (10000 × 100m)", cpu.String())
	}
}
