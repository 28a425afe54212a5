package cache

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/hashicorp/go-hclog"
	"github.com/ringfire/ringfire/shard"
)

// hostileMeta is the metadata a tenant may write on any object it makes: a 253-byte name, 1 MB
// of labels (the slot's among them), 256 KB of annotations, 300 owner references (one of them
// the controller, a Volcano Job of name job and uid), 100 finalizers, and every label and
// annotation the cut keeps at the longest value the API server allows or the cut keeps.
func hostileMeta(job string, uid types.UID) metav1.ObjectMeta {
	yes := true
	m := metav1.ObjectMeta{
		Name: strings.Repeat("n", 253), Namespace: strings.Repeat("s", 63), UID: "0c6c4e8e-6a83-4b7e-9b5d-3f0a5c2a1d11",
		ResourceVersion: "18446744073709551615", Generation: 1 << 40,
		Labels: map[string]string{}, Annotations: map[string]string{},
	}
	for i := 0; i < 1<<20/80; i++ {
		m.Labels[fmt.Sprintf("tenant.example/l%07d", i)] = strings.Repeat("v", 60)
	}
	for i := 0; i < 256<<10/1024; i++ {
		m.Annotations[fmt.Sprintf("tenant.example/a%04d", i)] = strings.Repeat("a", 1000)
	}
	for k := range readLabels {
		m.Labels[k] = strings.Repeat("L", 63)
	}
	for k := range readAnnotations {
		m.Annotations[k] = strings.Repeat("A", maxValue)
	}
	m.Labels[shard.SlotLabel] = "1023"
	m.Annotations[lastApplied] = strings.Repeat("{", 200<<10)
	for i := range 300 {
		m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: fmt.Sprintf("rs-%d-%s", i, strings.Repeat("r", 240)), UID: types.UID(fmt.Sprintf("uid-%d", i)),
		})
	}
	m.OwnerReferences[150] = metav1.OwnerReference{
		APIVersion: strings.Repeat("g", 400) + "/v1", Kind: strings.Repeat("K", 63),
		Name: job, UID: uid, Controller: &yes,
	}
	for i := range 100 {
		m.Finalizers = append(m.Finalizers, fmt.Sprintf("tenant.example/f%03d", i))
	}
	m.Finalizers = append(m.Finalizers, batchv1.JobTrackingFinalizer)
	m.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: strings.Repeat("m", 10<<10)}}
	return m
}

// volcanoController makes m's controller a Volcano Job of name job and uid.
func volcanoController(m metav1.ObjectMeta, job string, uid types.UID) metav1.ObjectMeta {
	yes := true
	m.OwnerReferences = append([]metav1.OwnerReference(nil), m.OwnerReferences...)
	m.OwnerReferences[150] = metav1.OwnerReference{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: job, UID: uid, Controller: &yes}
	return m
}

func jsonLen(t *testing.T, obj any) int {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return len(raw)
}

// A stub of the largest object a tenant can write is under StubBytes, keeps what the
// controllers read (name, UID, the controller, deletion, the slot and the keys they read,
// the tracking finalizer) and nothing else.
func TestStubOfTheLargestObjectIsBounded(t *testing.T) {
	m := hostileMeta("job", "job-uid")
	now := metav1.Now()
	m.DeletionTimestamp = &now
	grace := int64(30)
	m.DeletionGracePeriodSeconds = &grace
	whole := &corev1.ConfigMap{ObjectMeta: m, Data: map[string]string{"x": strings.Repeat("d", 1<<20)}}
	stub, isStub := cut(ConfigMaps, whole, owner{})
	if !isStub {
		t.Fatal("a foreign ConfigMap is not a stub")
	}
	n := jsonLen(t, stub)
	t.Logf("the largest stub: %d bytes of JSON, of %d", n, jsonLen(t, whole))
	if n > StubBytes {
		t.Errorf("stub of %d bytes, more than StubBytes (%d)", n, StubBytes)
	}
	s := stub.(*corev1.ConfigMap)
	if s.Name != m.Name || s.UID != m.UID || s.ResourceVersion != m.ResourceVersion || s.DeletionTimestamp == nil ||
		s.Labels[shard.SlotLabel] != "1023" || len(s.Labels) != len(readLabels) || len(s.Annotations) != len(readAnnotations) ||
		len(s.OwnerReferences) != 0 || len(s.Finalizers) != 1 || s.Data != nil || s.ManagedFields != nil {
		t.Errorf("stub keeps %d labels, %d annotations, %d owners, %d finalizers, data %v; want the read ones, no owner (its controller reference is no valid one)",
			len(s.Labels), len(s.Annotations), len(s.OwnerReferences), len(s.Finalizers), s.Data != nil)
	}
	// A valid controller reference is kept, alone: at its longest, the stub is at its largest.
	longest := strings.Repeat("j", maxName)
	m = volcanoController(m, longest, "0c6c4e8e-6a83-4b7e-9b5d-3f0a5c2a1d12")
	stub, _ = cut(Services, &corev1.Service{ObjectMeta: m}, owner{})
	if refs := stub.(*corev1.Service).OwnerReferences; len(refs) != 1 || refs[0].Name != longest {
		t.Errorf("stub owners %v, want the controller alone", refs)
	}
	n = jsonLen(t, stub)
	t.Logf("the largest stub with its controller: %d bytes of JSON", n)
	if n > StubBytes {
		t.Errorf("stub of %d bytes, more than StubBytes (%d)", n, StubBytes)
	}
	// Read values longer than the bound are dropped, not cut short.
	m.Annotations[batch.JobVersion] = strings.Repeat("9", maxValue+1)
	stub, _ = cut(Services, &corev1.Service{ObjectMeta: m}, owner{})
	if _, ok := stub.(*corev1.Service).Annotations[batch.JobVersion]; ok {
		t.Error("an annotation longer than maxValue is kept")
	}
}

// Each kind of a slot, as a tenant can write it, costs the cache at most a stub when it is no
// known Job's; what a known Job's objects keep beyond that is what the controllers read.
func TestEveryKindIsBoundedAfterItsCut(t *testing.T) {
	const job, uid = "job", types.UID("job-uid")
	known := owner{known: true, job: job, uid: uid}
	meta := func() metav1.ObjectMeta { return volcanoController(hostileMeta(job, uid), job, uid) }
	named := func(name string) metav1.ObjectMeta { m := meta(); m.Name = name; return m }
	bigData := map[string]string{}
	for i := range 60000 {
		bigData[fmt.Sprintf("k%05d", i)] = "v"
	}
	container := corev1.Container{Name: "c", Image: "example.invalid/x", Command: []string{strings.Repeat("c", 100<<10)},
		Env: []corev1.EnvVar{{Name: "E", Value: strings.Repeat("e", 100<<10)}}}
	pod := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: meta(), Spec: corev1.PodSpec{Containers: []corev1.Container{container, container}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Image: strings.Repeat("i", 1000)}}}}
	}
	for _, tc := range []struct {
		name  string
		r     Resource
		obj   any
		o     owner
		stub  bool
		bound int
	}{
		{"foreign pod", Pods, pod(), owner{}, true, StubBytes},
		{"a known Job's pod", Pods, pod(), known, false, StubBytes + 1<<10},
		{"foreign PodGroup", PodGroups, &scheduling.PodGroup{ObjectMeta: named(job + "-" + string(uid))}, owner{}, true, StubBytes},
		{"a known Job's PodGroup of another name", PodGroups, &scheduling.PodGroup{ObjectMeta: meta()}, known, true, StubBytes},
		{"foreign ConfigMap of 60,000 keys", ConfigMaps, &corev1.ConfigMap{ObjectMeta: named(job + svcSuffix), Data: bigData}, owner{}, true, StubBytes},
		{"a known Job's ConfigMap of another name", ConfigMaps, &corev1.ConfigMap{ObjectMeta: meta(), Data: bigData}, known, true, StubBytes},
		{"a known Job's hosts ConfigMap grown past MaxHostsData", ConfigMaps, &corev1.ConfigMap{ObjectMeta: named(job + svcSuffix), Data: bigData}, known, true, StubBytes},
		{"a known Job's hosts ConfigMap", ConfigMaps, &corev1.ConfigMap{ObjectMeta: named(job + svcSuffix),
			Data: map[string]string{"worker.host": strings.Repeat("h", 900<<10)}}, known, false, StubBytes + 900<<10 + 1<<10},
		{"a known Job's Service", Services, &corev1.Service{ObjectMeta: meta(), Spec: corev1.ServiceSpec{ExternalIPs: make([]string, 10000)}}, known, true, StubBytes},
		{"a known Job's PVC", PVCs, &corev1.PersistentVolumeClaim{ObjectMeta: meta()}, known, true, StubBytes},
		{"a known Job's NetworkPolicy", NetworkPolicies, &networkingv1.NetworkPolicy{ObjectMeta: meta(),
			Spec: networkingv1.NetworkPolicySpec{Ingress: make([]networkingv1.NetworkPolicyIngressRule, 10000)}}, known, true, StubBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := jsonLen(t, tc.obj)
			kept, stub := cut(tc.r, tc.obj, tc.o)
			n := jsonLen(t, kept)
			t.Logf("%d bytes of JSON kept of %d", n, before)
			if stub != tc.stub {
				t.Errorf("stub %v, want %v", stub, tc.stub)
			}
			if n > tc.bound {
				t.Errorf("%d bytes kept, more than the bound %d", n, tc.bound)
			}
		})
	}
	// A known Job's own PodGroup is kept whole (less its managed fields): the Job controller
	// updates it from the cached copy.
	pg := &scheduling.PodGroup{ObjectMeta: named(job + "-" + string(uid)), Spec: scheduling.PodGroupSpec{MinMember: 3}}
	labels := len(pg.Labels)
	kept, stub := cut(PodGroups, pg, known)
	if k := kept.(*scheduling.PodGroup); stub || len(k.Labels) != labels || k.Spec.MinMember != 3 || k.ManagedFields != nil {
		t.Errorf("the Job's own PodGroup: stub %v, %d labels of %d, minMember %d", stub, len(k.Labels), labels, k.Spec.MinMember)
	}
	// A known Job's pod keeps what SlimPod keeps, and the labels of the Job's selector.
	p := pod()
	p.Labels["team.example/selected"] = "yes"
	kept, _ = cut(Pods, p, owner{known: true, job: job, uid: uid, labels: map[string]bool{"team.example/selected": true}})
	if k := kept.(*corev1.Pod); k.Status.Phase != corev1.PodRunning || k.Labels["team.example/selected"] != "yes" ||
		len(k.Spec.Containers) != 0 || k.Annotations[batch.TaskSpecKey] == "" {
		t.Errorf("a known Job's pod: phase %q, selector label %q, %d containers, task %q",
			k.Status.Phase, k.Labels["team.example/selected"], len(k.Spec.Containers), k.Annotations[batch.TaskSpecKey])
	}
}

// Summaries, Commands and batch/v1 Jobs of other controllers, which every replica keeps for
// the whole cluster, are bounded whatever their writer put in them.
func TestClusterWideKindsAreBounded(t *testing.T) {
	m := hostileMeta("flow", "flow-uid")
	job := &batch.Job{ObjectMeta: m, Spec: batch.JobSpec{Queue: strings.Repeat("q", 253),
		Tasks: []batch.TaskSpec{{Name: "t", Replicas: 1}}},
		Status: batch.JobStatus{State: batch.JobState{Phase: batch.Running, Reason: "r", Message: strings.Repeat("m", 1000)}}}
	if n := jsonLen(t, summarize(job)); n > SummaryBytes {
		t.Errorf("summary of %d bytes, more than SummaryBytes (%d)", n, SummaryBytes)
	} else {
		t.Logf("summary: %d bytes of JSON, of %d", n, jsonLen(t, job))
	}
	cmd := &bus.Command{ObjectMeta: m, Action: strings.Repeat("x", 1<<20), Reason: strings.Repeat("r", 1<<20), Message: strings.Repeat("m", 1<<20),
		TargetObject: &metav1.OwnerReference{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: strings.Repeat("j", 253), UID: "u"}}
	slim, _ := SlimCommand(cmd)
	if n := jsonLen(t, slim); n > CommandBytes {
		t.Errorf("Command of %d bytes, more than CommandBytes (%d)", n, CommandBytes)
	} else {
		t.Logf("Command: %d bytes of JSON, of %d", n, jsonLen(t, cmd))
	}
	if c := slim.(*bus.Command); c.TargetObject == nil || c.TargetObject.Name != cmd.TargetObject.Name || len(c.Action) != maxValue {
		t.Errorf("the Command's target %v, action of %d bytes", c.TargetObject, len(c.Action))
	}
	other := "example.com/other"
	bj := &batchv1.Job{ObjectMeta: m, Spec: batchv1.JobSpec{ManagedBy: &other, Template: corev1.PodTemplateSpec{ObjectMeta: m}}}
	slim, _ = SlimBatchJob(bj)
	if n := jsonLen(t, slim); n > StubBytes+200 {
		t.Errorf("batch/v1 Job of another controller kept as %d bytes, more than StubBytes and its managedBy", n)
	}
	if s := slim.(*batchv1.Job); s.Spec.ManagedBy == nil || *s.Spec.ManagedBy != other {
		t.Error("the batch/v1 Job's spec.managedBy is not kept")
	}
}

// A Job that packs to more than maxPacked (200 KB of annotations no deflate shrinks) is not
// kept packed behind its summary: a gain of its slot reads it.
func TestJobTooLargeToPackIsNotKept(t *testing.T) {
	j := newJobs(nil, func() int { return 8 }, hclog.NewNullLogger(), nil)
	job := fullJob("big")
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		b := make([]byte, 1000)
		for k := range b {
			b[k] = byte('a' + rng.IntN(26))
		}
		job.Annotations[fmt.Sprintf("tenant.example/a%03d", i)] = string(b)
	}
	if p := j.pack("ns/big", job); p != nil {
		t.Fatalf("a Job packed to %d bytes, more than maxPacked (%d), is kept", len(p), maxPacked)
	}
	if p := j.pack("ns/small", fullJob("small")); p == nil {
		t.Fatal("an ordinary Job is not packed")
	}
}

// 1,000 Jobs of 200 KB of annotations each (that no deflate shrinks) cost every replica, once
// packed, their summaries alone: the summaries are cut, the Jobs too large to pack are not
// kept (a gain reads them): 3.6 MB in all. Before, each summary kept the annotations (200 KB)
// and each Job was packed whole (some 120 KB of deflated random letters): about 320 MB a
// replica, on every replica.
func TestHostileJobsCostTheirSummaries(t *testing.T) {
	n := 1000
	if raceEnabled {
		n = 100
	}
	rng := rand.New(rand.NewPCG(3, 4))
	text := func(size int) string {
		b := make([]byte, size)
		for k := range b {
			b[k] = byte('a' + rng.IntN(26))
		}
		return string(b)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	j := newJobs(nil, func() int { return 8 }, hclog.NewNullLogger(), nil)
	list := make([]any, 0, n)
	for i := range n {
		job := fullJob(fmt.Sprintf("hostile-%04d", i))
		for a := range 20 {
			job.Annotations[fmt.Sprintf("tenant.example/a%02d", a)] = text(10 << 10)
		}
		list = append(list, job)
	}
	if err := (jobsStore{j}).Replace(list, "1"); err != nil {
		t.Fatal(err)
	}
	list = nil
	j.packDue(time.Now(), true)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d Jobs of 200 KB of annotations: %d summaries, %d packed bytes, %d waiting whole; %.2f MB kept in all once packed",
		n, j.Summaries(), j.PackedBytes(), j.Unpacked(), float64(kept)/1e6)
	runtime.KeepAlive(j)
	if j.PackedBytes() != 0 || j.Unpacked() != 0 {
		t.Errorf("%d bytes packed, %d waiting whole; want none kept", j.PackedBytes(), j.Unpacked())
	}
	var largest int
	for _, obj := range j.GetIndexer().List() {
		largest = max(largest, jsonLen(t, obj))
	}
	if largest > SummaryBytes {
		t.Errorf("a summary of %d bytes, more than SummaryBytes", largest)
	}
}
