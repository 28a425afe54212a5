package cache

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/shard"
)

// slotMeta is the metadata of name in ns labelled with slot, controlled by a Volcano Job of
// name job and uid (none when job is empty).
func slotMeta(name string, slot int, job string, uid types.UID) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1",
		Labels: map[string]string{shard.SlotLabel: strconv.Itoa(slot), "tenant.example/big": strings.Repeat("x", 60)}}
	if job != "" {
		yes := true
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: job, UID: uid, Controller: &yes}}
	}
	return m
}

// forgedConfigMap is a tenant's ConfigMap of keys entries labelled with slot.
func forgedConfigMap(name string, slot, keys int) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: slotMeta(name, slot, "", ""), Data: make(map[string]string, keys)}
	for i := range keys {
		cm.Data[fmt.Sprintf("k%05d", i)] = "v"
	}
	return cm
}

func foreignGauge(t *testing.T, c *Cache) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c.ObjectsCollector())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "ringfire_cache_foreign_objects" {
			continue
		}
		for _, m := range f.GetMetric() {
			out[labelOf(m, "resource")] = m.GetGauge().GetValue()
		}
	}
	return out
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// Objects a tenant labelled with a live Job's slot (ConfigMaps of 60,000 keys, a Service, a
// PVC, a pod claiming a Job that does not exist) are kept as stubs and counted as foreign;
// the live Job's own pod, hosts ConfigMap and PodGroup are kept as the controllers read them.
// A pod whose Job comes to the cache only after it is made whole then, read again.
func TestForgedSlotObjectsAreStubsAndCounted(t *testing.T) {
	const live, liveUID = "live", types.UID("live-uid")
	slot := shard.SlotOf("ns/"+live, testSlots)
	kube := kubefake.NewSimpleClientset()
	vc := vcfake.NewSimpleClientset(&batch.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: live, UID: liveUID}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	create := func(obj any) {
		t.Helper()
		var err error
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			_, err = kube.CoreV1().ConfigMaps("ns").Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Service:
			_, err = kube.CoreV1().Services("ns").Create(ctx, o, metav1.CreateOptions{})
		case *corev1.PersistentVolumeClaim:
			_, err = kube.CoreV1().PersistentVolumeClaims("ns").Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Pod:
			_, err = kube.CoreV1().Pods("ns").Create(ctx, o, metav1.CreateOptions{})
		case *scheduling.PodGroup:
			_, err = vc.SchedulingV1beta1().PodGroups("ns").Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	const forged = 10
	for i := range forged {
		create(forgedConfigMap(fmt.Sprintf("forged-%d", i), slot, 60000))
	}
	create(&corev1.Service{ObjectMeta: slotMeta("forged-svc", slot, "", "")})
	create(&corev1.PersistentVolumeClaim{ObjectMeta: slotMeta("forged-pvc", slot, "", "")})
	create(&corev1.Pod{ObjectMeta: slotMeta("forged-pod", slot, live, "not-the-live-uid"), Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	create(&corev1.Pod{ObjectMeta: slotMeta("live-worker-0", slot, live, liveUID), Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	create(&corev1.ConfigMap{ObjectMeta: slotMeta(live+svcSuffix, slot, live, liveUID), Data: map[string]string{"worker.host": "live-worker-0.live"}})
	pg := &scheduling.PodGroup{ObjectMeta: slotMeta(live+"-"+string(liveUID), slot, live, liveUID), Spec: scheduling.PodGroupSpec{MinMember: 1}}
	create(pg)
	// The PodGroup controller's, for a ReplicaSet's pods: a stub, and not foreign.
	bare := &scheduling.PodGroup{ObjectMeta: slotMeta("podgroup-rs-uid", slot, "", "")}
	bare.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid", Controller: ptr.To(true)}}
	create(bare)

	ready := make(chan []int, 8)
	c := New(Config{Kube: kube, Volcano: vc, Slots: func() int { return testSlots }, SlotsReady: func(s []int) { ready <- s }})
	// Started as Start starts the Jobs and the slots' reflectors (the fake clientset serves no
	// watch-list, which the cluster-wide informers ask for).
	go c.jobs.run(ctx)
	go c.refetch.run(ctx)
	if !c.jobs.waitSynced(ctx) {
		t.Fatal("the Jobs never listed")
	}
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()
	c.SlotsGained([]int{slot})
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatal("the slot was never ready")
	}

	got := foreignGauge(t, c)
	for r, want := range map[Resource]float64{ConfigMaps: forged, Services: 1, PVCs: 1, Pods: 1, PodGroups: 0, NetworkPolicies: 0} {
		if got[string(r)] != want {
			t.Errorf("ringfire_cache_foreign_objects{resource=%q} = %v, want %v", r, got[string(r)], want)
		}
	}
	if !c.Owned(PodGroups).IsStub("ns/podgroup-rs-uid") {
		t.Error("the PodGroup of a ReplicaSet's pods is not a stub")
	}
	for i := range forged {
		obj, ok, _ := c.Owned(ConfigMaps).Indexer().GetByKey(fmt.Sprintf("ns/forged-%d", i))
		if !ok {
			t.Fatalf("forged ConfigMap %d is not in the cache (its stub stands for its name)", i)
		}
		if cm := obj.(*corev1.ConfigMap); cm.Data != nil || len(cm.Labels) != 1 {
			t.Errorf("forged ConfigMap kept with %d keys of data and %d labels, want a stub", len(cm.Data), len(cm.Labels))
		}
	}
	info, err := c.JobInfo("ns/" + live)
	if err != nil || info == nil {
		t.Fatalf("JobInfo: %v %v", info, err)
	}
	if p := info.Pods[""]["live-worker-0"]; p == nil || p.Status.Phase != corev1.PodRunning {
		t.Errorf("the live Job's pod: %+v, want it with its status", p)
	}
	if p := info.Foreign["forged-pod"]; p == nil || p.Status.Phase != "" {
		t.Errorf("the forged pod of another UID: %+v, want a stub told apart as foreign", p)
	}
	if info.PodGroup == nil || info.PodGroup.Spec.MinMember != 1 || info.PodGroup.Labels["tenant.example/big"] == "" {
		t.Errorf("the live Job's PodGroup: %+v, want it whole", info.PodGroup)
	}
	if obj, _, _ := c.Owned(ConfigMaps).Indexer().GetByKey("ns/" + live + svcSuffix); obj == nil || obj.(*corev1.ConfigMap).Data["worker.host"] == "" {
		t.Errorf("the live Job's hosts ConfigMap: %+v, want its data", obj)
	}

	// A Job's pod that comes before its Job is a foreign stub until the Job comes.
	late, lateUID := "", types.UID("late-uid")
	for i := 0; late == ""; i++ {
		if name := fmt.Sprintf("late-%d", i); shard.SlotOf("ns/"+name, testSlots) == slot {
			late = name // of the held slot, so that JobInfo has it in full
		}
	}
	create(&corev1.Pod{ObjectMeta: slotMeta(late+"-worker-0", slot, late, lateUID), Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	create(&scheduling.PodGroup{ObjectMeta: slotMeta(late+"-"+string(lateUID), slot, late, lateUID), Spec: scheduling.PodGroupSpec{MinMember: 2}})
	eventually(t, "the late Job's pod and PodGroup are cached as foreign stubs", func() bool {
		got := foreignGauge(t, c)
		return c.Owned(Pods).IsStub("ns/"+late+"-worker-0") && got[string(Pods)] == 2 && got[string(PodGroups)] == 1
	})
	if _, err := vc.BatchV1alpha1().Jobs("ns").Create(ctx, &batch.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: late, UID: lateUID}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the late Job's pod and PodGroup are read again whole once the Job is in the cache", func() bool {
		// Meanwhile the Job's PodGroup is never given as its own while it is a stub: its
		// controller would update it from the cached copy.
		if info, err := c.JobInfo("ns/" + late); err == nil && info != nil && info.PodGroup != nil && info.PodGroup.Spec.MinMember != 2 {
			t.Fatalf("the late Job's PodGroup given as %+v while a stub", info.PodGroup)
		}
		obj, ok, _ := c.Owned(Pods).Indexer().GetByKey("ns/" + late + "-worker-0")
		info, err := c.JobInfo("ns/" + late)
		got := foreignGauge(t, c)
		return ok && !c.Owned(Pods).IsStub("ns/"+late+"-worker-0") && obj.(*corev1.Pod).Status.Phase == corev1.PodRunning &&
			err == nil && info != nil && info.PodGroup != nil && got[string(Pods)] == 1 && got[string(PodGroups)] == 0
	})
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 20s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
