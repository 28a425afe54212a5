package crds_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/controllers/queue"
	"github.com/ringfire/ringfire/deploy/crds"
)

var queues = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "queues"}

// newQueue is a Queue as a user writes it, for the dynamic client: explicit zeros stay.
func newQueue(name string, spec map[string]any, annotations map[string]any) *unstructured.Unstructured {
	metadata := map[string]any{"name": name}
	if annotations != nil {
		metadata["annotations"] = annotations
	}
	obj := map[string]any{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": metadata}
	if spec != nil {
		obj["spec"] = spec
	}
	return &unstructured.Unstructured{Object: obj}
}

// jobOnClosedQueue: a Job on a queue labelled not-open whose state is not Open is refused with
// Volcano's message; the label alone does not refuse (the state is what counts), nor does a
// closed state without the label (the policy reads only labelled queues).
func jobOnClosedQueue(ctx context.Context, t *testing.T, vc versioned.Interface) {
	for _, name := range []string{"shut", "unmarked"} {
		q := &schedulingv1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: schedulingv1beta1.QueueSpec{Weight: 1}}
		if _, err := vc.SchedulingV1beta1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setState := func(name string, state schedulingv1beta1.QueueState) {
		t.Helper()
		q, err := vc.SchedulingV1beta1().Queues().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		q.Status.State = state
		if _, err := vc.SchedulingV1beta1().Queues().UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	onQueue := func(name string) error {
		job := validJob("on-" + name)
		job.Spec.Queue = name
		_, err := vc.BatchV1alpha1().Jobs(namespace).Create(ctx, job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	setState("shut", schedulingv1beta1.QueueStateOpen)
	mark(ctx, t, vc, "shut", queue.NotOpenLabel)
	setState("shut", schedulingv1beta1.QueueStateClosing)
	err := refusedSoon(func() error { return onQueue("shut") })
	checkInvalid(t, err, "can only submit job to queue with state `Open`, queue `shut` status is `Closing`")

	setState("shut", schedulingv1beta1.QueueStateOpen) // labelled, but open again
	var last error
	for range 300 { // the API server sees the new state a moment after it is written
		if last = onQueue("shut"); last == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if last != nil {
		t.Errorf("a Job on an open queue still labelled not-open is refused: %v", last)
	}
	setState("unmarked", schedulingv1beta1.QueueStateClosed)
	if err := onQueue("unmarked"); err != nil {
		t.Errorf("a Job on a closed queue without the label is refused: %v", err)
	}
}

// queueResources: what the Queue CRD refuses of a queue's resource lists, as Volcano's webhook:
// negative quantities, fractions of a resource counted in units, a guarantee above deserved (or
// missing from it), deserved above capability; and any change to the root queue's resources.
func queueResources(ctx context.Context, t *testing.T, vc versioned.Interface, dyn dynamic.Interface) {
	rows := []struct {
		name string
		spec map[string]any
		want string // part of the refusal; "" to be accepted
	}{
		{"negative capability", map[string]any{"capability": map[string]any{"cpu": "-1", "memory": "1Gi"}}, "capability[cpu]=-1: must be greater than or equal to 0"},
		{"negative deserved", map[string]any{"deserved": map[string]any{"memory": "-1Gi"}}, "deserved[memory]=-1Gi: must be greater than or equal to 0"},
		{"negative guarantee", map[string]any{"guarantee": map[string]any{"resource": map[string]any{"cpu": int64(-2)}}}, "guarantee.resource[cpu]=-2: must be greater than or equal to 0"},
		{"half a gpu", map[string]any{"capability": map[string]any{"nvidia.com/gpu": "0.5"}}, "capability[nvidia.com/gpu]=0.5: must be an integer"},
		{"1500m pods", map[string]any{"deserved": map[string]any{"pods": "1500m"}}, "deserved[pods]=1500m: must be an integer"},
		{"guarantee above deserved", map[string]any{"deserved": map[string]any{"cpu": "1"}, "guarantee": map[string]any{"resource": map[string]any{"cpu": "2"}}}, "deserved[cpu]=1 must be >= guarantee[cpu]=2"},
		{"guarantee not in deserved", map[string]any{"guarantee": map[string]any{"resource": map[string]any{"memory": "1Gi"}}}, "deserved[memory] (missing) must be >= guarantee[memory]=1Gi"},
		{"deserved above capability", map[string]any{"capability": map[string]any{"cpu": "2"}, "deserved": map[string]any{"cpu": "3"}}, "deserved[cpu]=3 must be <= capability[cpu]=2"},
		{"fractions of cpu", map[string]any{"capability": map[string]any{"cpu": "1.5", "example.kubernetes.io/x": "0.5"}}, ""},
		{"ordered", map[string]any{
			"capability": map[string]any{"cpu": "8", "nvidia.com/gpu": int64(4)},
			"deserved":   map[string]any{"cpu": "4000m", "memory": "8Gi", "nvidia.com/gpu": int64(2)},
			"guarantee":  map[string]any{"resource": map[string]any{"cpu": "4", "memory": "8Gi"}},
		}, ""},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			_, err := dyn.Resource(queues).Create(ctx, newQueue("resources", r.spec, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if r.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			checkInvalid(t, err, r.want)
		})
	}

	storedBefore(ctx, t, dyn)

	root, err := vc.SchedulingV1beta1().Queues().Get(ctx, queue.RootQueue, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changed := root.DeepCopy()
	changed.Spec.Capability = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	_, err = vc.SchedulingV1beta1().Queues().Update(ctx, changed, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	checkInvalid(t, err, "root queue's resource attributes (capability, deserved, guarantee) cannot be modified")
	weighted := root.DeepCopy()
	weighted.Spec.Weight = 3
	if _, err := vc.SchedulingV1beta1().Queues().Update(ctx, weighted, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the root queue's weight cannot change: %v", err)
	}
}

// queueDepth: a queue naming as its parent one labelled at-max-depth is refused, on create and
// on a change of parent; other changes of a queue already under it are not.
func queueDepth(ctx context.Context, t *testing.T, vc versioned.Interface) {
	create := func(name, parent string, dryRun bool) error {
		q := &schedulingv1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: schedulingv1beta1.QueueSpec{Weight: 1, Parent: parent}}
		opts := metav1.CreateOptions{}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err := vc.SchedulingV1beta1().Queues().Create(ctx, q, opts)
		return err
	}
	for _, q := range [][2]string{{"deep", ""}, {"under-deep", "deep"}, {"elsewhere", ""}} {
		if err := create(q[0], q[1], false); err != nil {
			t.Fatal(err)
		}
	}
	mark(ctx, t, vc, "deep", queue.AtMaxDepthLabel)
	err := refusedSoon(func() error { return create("too-deep", "deep", true) })
	checkInvalid(t, err, "queue too-deep exceeds the maximum allowed depth of 5: its parent queue deep is 5 queues below root")

	moved, err := vc.SchedulingV1beta1().Queues().Get(ctx, "elsewhere", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	moved.Spec.Parent = "deep"
	_, err = vc.SchedulingV1beta1().Queues().Update(ctx, moved, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	checkInvalid(t, err, "queue elsewhere exceeds the maximum allowed depth of 5")

	stays, err := vc.SchedulingV1beta1().Queues().Get(ctx, "under-deep", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stays.Spec.Weight = 2
	if _, err := vc.SchedulingV1beta1().Queues().Update(ctx, stays, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("a queue already under deep cannot change its weight: %v", err)
	}
}

// hierarchyAnnotations: the hierarchy annotations need as many weights as path parts, each a
// number above 0.
func hierarchyAnnotations(ctx context.Context, t *testing.T, dyn dynamic.Interface, cfg *rest.Config) {
	rows := []struct {
		hierarchy, weights string
		want               string // "" to be accepted
	}{
		{"root/sci/dev", "1/8", "volcano.sh/hierarchy must have the same length with volcano.sh/hierarchy-weights"},
		{"root/sci", "1/x", `"x" in the volcano.sh/hierarchy-weights "1/x" is invalid number`},
		{"root/sci", "1/0", `0 in the volcano.sh/hierarchy-weights "1/0" must be larger than 0`},
		{"sci", "", `"" in the volcano.sh/hierarchy-weights "" is invalid number`},
		{"root/sci", "1/2.5", ""},
	}
	// A queue stored before the policy, with weights that break it, can still be written
	// otherwise, but not given other bad weights.
	old := newQueue("annotated-before", nil, map[string]any{"volcano.sh/hierarchy": "root/a", "volcano.sh/hierarchy-weights": "1/0"})
	createUnchecked(ctx, t, dyn, cfg, old)
	labelled := `{"metadata":{"labels":{"team":"a"}}}`
	if _, err := dyn.Resource(queues).Patch(ctx, "annotated-before", types.MergePatchType, []byte(labelled), metav1.PatchOptions{}); err != nil {
		t.Errorf("a label on a queue whose weights break the policy: %v", err)
	}
	reweighted := `{"metadata":{"annotations":{"volcano.sh/hierarchy-weights":"1/-1"}}}`
	_, err := dyn.Resource(queues).Patch(ctx, "annotated-before", types.MergePatchType, []byte(reweighted), metav1.PatchOptions{})
	checkInvalid(t, err, "-1 in the volcano.sh/hierarchy-weights")

	for _, r := range rows {
		t.Run(r.hierarchy+" "+r.weights, func(t *testing.T) {
			annotations := map[string]any{"volcano.sh/hierarchy": r.hierarchy}
			if r.weights != "" {
				annotations["volcano.sh/hierarchy-weights"] = r.weights
			}
			_, err := dyn.Resource(queues).Create(ctx, newQueue("annotated", nil, annotations), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if r.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			checkInvalid(t, err, r.want)
		})
	}
}

// queueDefaults: a new Queue is stored as Volcano's webhook and CRD leave it: weight 1 (also for
// an explicit 0), reclaimable true unless set, dequeueStrategy traverse, and hierarchy
// annotations that do not start at root prefixed with root and its weight.
func queueDefaults(ctx context.Context, t *testing.T, dyn dynamic.Interface) {
	rows := []struct {
		name        string
		spec        map[string]any
		annotations map[string]any
		wantSpec    map[string]any
		wantAnn     map[string]any
	}{
		{"no spec", nil, nil,
			map[string]any{"weight": int64(1), "reclaimable": true, "dequeueStrategy": "traverse"}, nil},
		{"empty spec", map[string]any{}, nil,
			map[string]any{"weight": int64(1), "reclaimable": true, "dequeueStrategy": "traverse"}, nil},
		{"weight 0", map[string]any{"weight": int64(0)}, nil,
			map[string]any{"weight": int64(1), "reclaimable": true, "dequeueStrategy": "traverse"}, nil},
		{"set by hand", map[string]any{"weight": int64(4), "reclaimable": false, "dequeueStrategy": "fifo", "parent": "team"}, nil,
			map[string]any{"weight": int64(4), "reclaimable": false, "dequeueStrategy": "fifo", "parent": "team"}, nil},
		{"hierarchy below root", nil, map[string]any{"volcano.sh/hierarchy": "sci/dev", "volcano.sh/hierarchy-weights": "2/8"},
			map[string]any{"weight": int64(1), "reclaimable": true, "dequeueStrategy": "traverse"},
			map[string]any{"volcano.sh/hierarchy": "root/sci/dev", "volcano.sh/hierarchy-weights": "1/2/8"}},
		{"hierarchy from root", nil, map[string]any{"volcano.sh/hierarchy": "root/sci", "volcano.sh/hierarchy-weights": "1/8"},
			map[string]any{"weight": int64(1), "reclaimable": true, "dequeueStrategy": "traverse"},
			map[string]any{"volcano.sh/hierarchy": "root/sci", "volcano.sh/hierarchy-weights": "1/8"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			name := "defaults-" + strings.ReplaceAll(r.name, " ", "-")
			got, err := dyn.Resource(queues).Create(ctx, newQueue(name, r.spec, r.annotations), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			spec, _, _ := unstructured.NestedMap(got.Object, "spec")
			if !equalJSON(spec, r.wantSpec) {
				t.Errorf("spec %v, want %v", spec, r.wantSpec)
			}
			ann, _, _ := unstructured.NestedMap(got.Object, "metadata", "annotations")
			if !equalJSON(ann, r.wantAnn) {
				t.Errorf("annotations %v, want %v", ann, r.wantAnn)
			}
		})
	}
}

// equalJSON compares two decoded JSON maps, nil and empty alike.
func equalJSON(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || fmt.Sprint(v) != fmt.Sprint(w) {
			return false
		}
	}
	return true
}

// createUnchecked creates obj, a Queue, past ringfire-queue-annotations, as if it was stored
// before the policy: it deletes the policy's binding, creates obj once the API server no longer
// enforces it, and installs the binding again.
func createUnchecked(ctx context.Context, t *testing.T, dyn dynamic.Interface, cfg *rest.Config, obj *unstructured.Unstructured) {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(cfg)
	if err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, "ringfire-queue-annotations", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var err error
	for range 300 { // the API server drops the binding a moment after its delete
		if _, err = dyn.Resource(queues).Create(ctx, obj, metav1.CreateOptions{}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("create %s past the policy: %v", obj.GetName(), err)
	}
	if err := crds.Install(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	bad := newQueue("probe", nil, map[string]any{"volcano.sh/hierarchy": "root", "volcano.sh/hierarchy-weights": "0"})
	for range 300 { // the binding is back a moment after Install rewrote it
		if _, err = dyn.Resource(queues).Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("ringfire-queue-annotations is not enforced again after Install")
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// storedBefore: a queue whose guarantee is above its deserved, stored before the Queue CRD had
// its rules (here: while its spec rules are taken out), keeps it through an update that leaves
// its resources alone (the Queue controller writes spec.parent), but not through one that
// changes them.
func storedBefore(ctx context.Context, t *testing.T, dyn dynamic.Interface) {
	crds := dyn.Resource(crdResource)
	const name = "queues.scheduling.volcano.sh"
	crd, err := crds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	spec := []string{"schema", "openAPIV3Schema", "properties", "spec", "x-kubernetes-validations"}
	rules, _, _ := unstructured.NestedSlice(versions[0].(map[string]any), spec...)
	unstructured.RemoveNestedField(versions[0].(map[string]any), spec...)
	if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	old := newQueue("stored-before", map[string]any{
		"deserved": map[string]any{"cpu": "1"}, "guarantee": map[string]any{"resource": map[string]any{"cpu": "2"}},
	}, nil)
	for range 300 { // the API server takes the new schema a moment later
		if _, err = dyn.Resource(queues).Create(ctx, old, metav1.CreateOptions{}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("create a queue past the rules: %v", err)
	}

	crd, err = crds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	versions, _, _ = unstructured.NestedSlice(crd.Object, "spec", "versions")
	if err := unstructured.SetNestedSlice(versions[0].(map[string]any), rules, spec...); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	reguaranteed := `{"spec":{"guarantee":{"resource":{"cpu":"3"}}}}`
	for range 300 {
		_, err = dyn.Resource(queues).Patch(ctx, "stored-before", types.MergePatchType, []byte(reguaranteed), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	checkInvalid(t, err, "deserved[cpu]=1 must be >= guarantee[cpu]=3")
	parented := `{"spec":{"parent":"root"}}`
	if _, err := dyn.Resource(queues).Patch(ctx, "stored-before", types.MergePatchType, []byte(parented), metav1.PatchOptions{}); err != nil {
		t.Errorf("spec.parent of a queue stored before the rules: %v", err)
	}
}
