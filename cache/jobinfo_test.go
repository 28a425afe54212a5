package cache

import (
	"slices"
	"sort"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/shard"
)

// controlledMeta is the metadata of an object named name in ns, labelled with the slot of
// Job ns/job and controlled by a Volcano Job named job with uid.
func controlledMeta(name, job string, uid types.UID) metav1.ObjectMeta {
	yes := true
	return metav1.ObjectMeta{
		Namespace: "ns", Name: name, UID: types.UID("obj-" + name + "-" + string(uid)),
		Labels:      map[string]string{shard.SlotLabel: strconv.Itoa(slotOfJob(job))},
		Annotations: map[string]string{batch.TaskSpecKey: "worker"},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: job, UID: uid, Controller: &yes,
		}},
	}
}

// A Job re-created under the name of an earlier one owns only what carries its own UID: the
// earlier Job's pods, PodGroup and PVCs, still there until the garbage collector deletes them,
// are indexed under the same key (their deletes wake the Job) but never returned as its own;
// the pods are told apart as Foreign, by name.
func TestJobInfoHoldsOnlyObjectsOfTheJobsUID(t *testing.T) {
	c := New(Config{Kube: kubefake.NewSimpleClientset(), Volcano: vcfake.NewSimpleClientset()})
	const job, oldUID, newUID = "rc", types.UID("uid-old"), types.UID("uid-new")
	if err := c.jobs.indexer.Add(&batch.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: job, UID: newUID}}); err != nil {
		t.Fatal(err)
	}
	add := func(r Resource, obj any) {
		t.Helper()
		if err := c.owned[r].indexer.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	succeeded := func(name string, uid types.UID) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: controlledMeta(name, job, uid), Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	}
	// The earlier Job's two pods, one of whose names the new Job has taken already, and a
	// third the new Job has not made yet.
	add(Pods, succeeded("rc-worker-0", oldUID))
	add(Pods, succeeded("rc-worker-1", oldUID))
	add(Pods, &corev1.Pod{ObjectMeta: controlledMeta("rc-worker-2", job, newUID)})
	// A pod whose controller is a Job of the name with no UID at all is nobody's.
	noUID := succeeded("rc-worker-3", "")
	add(Pods, noUID)
	add(PodGroups, &scheduling.PodGroup{ObjectMeta: controlledMeta("rc-"+string(oldUID), job, oldUID)})
	add(PVCs, &corev1.PersistentVolumeClaim{ObjectMeta: controlledMeta("rc-pvc-old", job, oldUID)})
	add(PVCs, &corev1.PersistentVolumeClaim{ObjectMeta: controlledMeta("rc-pvc-new", job, newUID)})

	info, err := c.JobInfo("ns/" + job)
	if err != nil || info == nil {
		t.Fatalf("JobInfo: %v, %v", info, err)
	}
	var own []string
	for _, pods := range info.Pods {
		for name := range pods {
			own = append(own, name)
		}
	}
	if len(own) != 1 || own[0] != "rc-worker-2" {
		t.Errorf("own pods %v, want [rc-worker-2]", own)
	}
	var foreign []string
	for name := range info.Foreign {
		foreign = append(foreign, name)
	}
	sort.Strings(foreign)
	if want := []string{"rc-worker-0", "rc-worker-1", "rc-worker-3"}; !slices.Equal(foreign, want) {
		t.Errorf("foreign pods %v, want %v", foreign, want)
	}
	if info.PodGroup != nil {
		t.Errorf("the earlier Job's PodGroup %s taken as the Job's", info.PodGroup.Name)
	}
	pvcs, err := c.OwnedBy(PVCs, "ns/"+job, newUID)
	if err != nil {
		t.Fatal(err)
	}
	if len(pvcs) != 1 || pvcs[0].(*corev1.PersistentVolumeClaim).Name != "rc-pvc-new" {
		t.Errorf("OwnedBy PVCs: %d objects, want only rc-pvc-new", len(pvcs))
	}
	// The earlier Job's objects stay under its key: a delete of one reaches the Job of the name.
	for _, obj := range []metav1.Object{succeeded("rc-worker-0", oldUID), noUID} {
		if key, ok := JobKey(obj); !ok || key != "ns/"+job {
			t.Errorf("JobKey of %s = %q, %v; want ns/%s", obj.GetName(), key, ok, job)
		}
	}
}

func TestControlledBy(t *testing.T) {
	yes, no := true, false
	ref := func(uid types.UID, controller *bool) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "rc", UID: uid, Controller: controller,
		}}}}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		uid  types.UID
		want bool
	}{
		{"same uid", ref("a", &yes), "a", true},
		{"other uid", ref("b", &yes), "a", false},
		{"owner but not controller", ref("a", &no), "a", false},
		{"no owner", &corev1.Pod{}, "a", false},
		{"empty uid on both sides", ref("", &yes), "", false},
	} {
		if got := ControlledBy(tc.pod, tc.uid); got != tc.want {
			t.Errorf("%s: ControlledBy = %v, want %v", tc.name, got, tc.want)
		}
	}
}
