package crds_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/apis/pkg/client/clientset/versioned"

	batchstate "github.com/ringfire/ringfire/controllers/batchjob/state"
	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/controllers/queue"
	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
)

// TestAdmissionPolicies installs the CRDs and their admission policies into a real API server
// and checks each refusal that needs more than a CRD rule: negative resource quantities (Volcano
// refuses them as invalid pods), a Job on a queue that has child queues or is not open,
// deleting the root, default or a non-leaf queue, a queue too deep in the hierarchy, bad
// hierarchy annotations, a Command to open or close a Queue from a user who may not update it, a
// slot label or a Volcano Job's controller reference a tenant writes;
// the Queue rules of the CRD (its own parent, resource quantities and their relations, the root
// queue's resources); and the defaults a new Queue gets.
func TestAdmissionPolicies(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{Nodes: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := crds.Install(ctx, c.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	vc, err := versioned.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}

	t.Run("root queue", func(t *testing.T) {
		q, err := vc.SchedulingV1beta1().Queues().Get(ctx, "root", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if q.Spec.Weight != 1 || q.Spec.Reclaimable == nil || *q.Spec.Reclaimable {
			t.Errorf("root queue: weight %d, reclaimable %v; want 1, false", q.Spec.Weight, q.Spec.Reclaimable)
		}
	})

	t.Run("gang size annotation", func(t *testing.T) {
		for _, tc := range []struct {
			value string // "" for no annotation
			want  string // part of the refusal; "" to be accepted
		}{
			{"", ""},
			{"3", ""},
			{"10000", ""},
			{"10001", "scheduling.volcano.sh/group-min-member is 10001; ringfire runs at most 10000 pods in one gang (docs/jobs.md, Limits)"},
			{"2147483647", "scheduling.volcano.sh/group-min-member is 2147483647; ringfire runs at most 10000"},
			{"2147483648", ""}, // beyond int32: the controller reads 1
			{"lots", ""},
		} {
			rs := &appsv1.ReplicaSet{
				ObjectMeta: metav1.ObjectMeta{Name: "gang", Namespace: namespace},
				Spec: appsv1.ReplicaSetSpec{
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "gang"}},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "gang"}},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
					},
				},
			}
			if tc.value != "" {
				rs.Annotations = map[string]string{schedulingv1beta1.VolcanoGroupMinMemberAnnotationKey: tc.value}
			}
			_, err := c.Clientset().AppsV1().ReplicaSets(namespace).Create(ctx, rs, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%q: refused: %v", tc.value, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%q: got %v, want refused with %q", tc.value, err, tc.want)
			case err != nil:
				t.Logf("refused: %v", err)
			}
		}
	})

	t.Run("batch/v1 template metadata", func(t *testing.T) {
		entries := func(n, size int) map[string]string {
			m := map[string]string{}
			for i := range n {
				k := fmt.Sprintf("example.com/k%05d", i)
				m[k] = strings.Repeat("v", max(size-len(k), 0))
			}
			return m
		}
		per := state.MaxTemplateMetadataBytes/state.MaxTemplateMetadataEntries - 80 // an annotation's share beside labels of 80
		for _, tc := range []struct {
			name                string
			managedBy           string
			labels, annotations map[string]string
			want                string // part of the refusal; "" to be accepted
		}{
			{"at the limits", batchstate.ControllerName, entries(state.MaxTemplateMetadataEntries, 80), entries(state.MaxTemplateMetadataEntries, per), ""},
			{"over the bytes", batchstate.ControllerName, entries(state.MaxTemplateMetadataEntries, 80), entries(state.MaxTemplateMetadataEntries, per+1),
				"spec.template.metadata carries more than 65536 bytes of labels and annotations (keys and values together); ringfire takes at most that much"},
			{"257 labels", batchstate.ControllerName, entries(state.MaxTemplateMetadataEntries+1, 20), nil,
				"spec.template.metadata has 257 labels and 0 annotations; ringfire takes at most 256 of each, since every pod copies them"},
			{"not ringfire's", "", entries(300, 20), entries(1, 100<<10), ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				job := &batchv1.Job{
					ObjectMeta: metav1.ObjectMeta{Name: "labelled", Namespace: namespace},
					Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: tc.labels, Annotations: tc.annotations},
						Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
					}},
				}
				if tc.managedBy != "" {
					job.Spec.ManagedBy = &tc.managedBy
				}
				_, err := c.Clientset().BatchV1().Jobs(namespace).Create(ctx, job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("refused: %v", err)
				case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
					t.Errorf("got %v, want refused with %q", err, tc.want)
				case err != nil:
					t.Logf("refused: %v", err)
				}
			})
		}
	})

	t.Run("resource quantities", func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			resource string
			value    any // as the user writes it
			limit    bool
			init     bool
			want     string // part of the refusal; "" to be accepted
		}{
			{"cpu -1", "cpu", "-1", false, false, "not c: cpu -1"},
			{"cpu abc", "cpu", "abc", false, false, "resources.requests.cpu"},
			{"memory -1Gi", "memory", "-1Gi", false, false, "not c: memory -1Gi"},
			{"memory limit -1", "memory", "-1", true, false, "not c: memory -1"},
			{"init container gpu -2", "nvidia.com/gpu", "-2", false, true, "not i: nvidia.com/gpu -2"},
			{"cpu 500m", "cpu", "500m", false, false, ""},
			{"cpu 2 as a number", "cpu", int64(2), false, false, ""},
			{"memory 1Gi", "memory", "1Gi", true, false, ""},
			{"cpu 0", "cpu", "0", false, false, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				job := quantityJob(tc.resource, tc.value, tc.limit, tc.init)
				_, err := dyn.Resource(jobs).Namespace(namespace).Create(ctx, job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				checkInvalid(t, err, tc.want)
			})
		}
		cron := validCronJob("negative")
		cron.Spec.JobTemplate.Spec.Tasks[0].Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("-1"),
		}
		_, err := vc.BatchV1alpha1().CronJobs(namespace).Create(ctx, cron, metav1.CreateOptions{})
		checkInvalid(t, err, "must be non-negative quantities")
	})

	t.Run("job on a non-leaf queue", func(t *testing.T) {
		for _, q := range []*schedulingv1beta1.Queue{
			{ObjectMeta: metav1.ObjectMeta{Name: "parent"}, Spec: schedulingv1beta1.QueueSpec{Weight: 1}},
			{ObjectMeta: metav1.ObjectMeta{Name: "leaf"}, Spec: schedulingv1beta1.QueueSpec{Weight: 1, Parent: "parent"}},
		} {
			if _, err := vc.SchedulingV1beta1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		onQueue := func(name string) error {
			job := validJob("on-" + name)
			job.Spec.Queue = name
			_, err := vc.BatchV1alpha1().Jobs(namespace).Create(ctx, job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
		// Unlabelled (no Queue controller here), the parent takes the Job: the policy reads only
		// the marks the controller keeps.
		if err := onQueue("parent"); err != nil {
			t.Fatalf("refused before the parent is marked: %v", err)
		}
		mark(ctx, t, vc, "parent", queue.HasChildrenLabel)
		err := refusedSoon(func() error { return onQueue("parent") })
		checkInvalid(t, err, "can only submit job to leaf queue, queue `parent` has child queues")
		if err := onQueue("leaf"); err != nil {
			t.Errorf("a Job on the leaf queue is refused: %v", err)
		}
		if err := onQueue("default"); err != nil {
			t.Errorf("a Job on the default queue is refused: %v", err)
		}
		checkInvalid(t, onQueue("root"), "a Job cannot be submitted to the root queue")
	})

	t.Run("queue deletion", func(t *testing.T) {
		for _, tc := range []struct{ name, want string }{
			{"root", "`root` queue can not be deleted"},
			{"default", "`default` queue can not be deleted"},
			{"parent", "queue parent can not be deleted because it has child queues"},
		} {
			err := vc.SchedulingV1beta1().Queues().Delete(ctx, tc.name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
			switch {
			case !apierrors.IsForbidden(err):
				t.Errorf("delete %s: %v; want Forbidden", tc.name, err)
			case !strings.Contains(err.Error(), tc.want):
				t.Errorf("delete %s: %v; want %q", tc.name, err, tc.want)
			}
		}
		if err := vc.SchedulingV1beta1().Queues().Delete(ctx, "leaf", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("a leaf queue cannot be deleted: %v", err)
		}
	})

	t.Run("queue is its own parent", func(t *testing.T) {
		q := &schedulingv1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "narcissus"}, Spec: schedulingv1beta1.QueueSpec{Weight: 1, Parent: "narcissus"}}
		_, err := vc.SchedulingV1beta1().Queues().Create(ctx, q, metav1.CreateOptions{})
		checkInvalid(t, err, "a queue cannot be its own parent")
	})

	t.Run("job on a queue that is not open", func(t *testing.T) { jobOnClosedQueue(ctx, t, vc) })
	t.Run("queue resources", func(t *testing.T) { queueResources(ctx, t, vc, dyn) })
	t.Run("queue depth", func(t *testing.T) { queueDepth(ctx, t, vc) })
	t.Run("queue hierarchy annotations", func(t *testing.T) { hierarchyAnnotations(ctx, t, dyn, c.RESTConfig()) })
	t.Run("queue defaults", func(t *testing.T) { queueDefaults(ctx, t, dyn) })
	t.Run("queue commands", func(t *testing.T) { queueCommands(ctx, t, c.Clientset(), c.RESTConfig()) })
	t.Run("slot label", func(t *testing.T) { slotLabel(ctx, t, c.Clientset(), c.RESTConfig()) })
}

var jobs = schema.GroupVersionResource{Group: "batch.volcano.sh", Version: "v1alpha1", Resource: "jobs"}

// quantityJob is a Job whose one container (or init container) asks for value of resource, as
// a request or as a limit, written as a user writes it (a string or a number).
func quantityJob(resource string, value any, limit, init bool) *unstructured.Unstructured {
	kind, name := "requests", "c"
	if limit {
		kind = "limits"
	}
	container := map[string]any{"name": "c", "image": "busybox"}
	bad := map[string]any{"name": "i", "image": "busybox", "resources": map[string]any{kind: map[string]any{resource: value}}}
	containers, inits := []any{bad}, []any{}
	if init {
		containers, inits = []any{container}, []any{bad}
	} else {
		bad["name"] = name
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
		"metadata": map[string]any{"name": "quantities", "namespace": namespace},
		"spec": map[string]any{"tasks": []any{map[string]any{
			"name": "t", "replicas": int64(1),
			"template": map[string]any{"spec": map[string]any{"containers": containers, "initContainers": inits}},
		}}},
	}}
}

// mark labels the named queue with key=true, as the Queue controller does (HasChildrenLabel,
// NotOpenLabel, AtMaxDepthLabel), and waits until the API server's admission sees it: a dry-run
// probe is refused.
func mark(ctx context.Context, t *testing.T, vc versioned.Interface, name, key string) {
	t.Helper()
	q, err := vc.SchedulingV1beta1().Queues().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q.Labels == nil {
		q.Labels = map[string]string{}
	}
	q.Labels[key] = "true"
	if _, err := vc.SchedulingV1beta1().Queues().Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// refusedSoon retries try until it fails, for up to 30 seconds: the API server watches the
// labelled Queues, and sees a new label a moment after it is written.
func refusedSoon(try func() error) error {
	deadline := time.Now().Add(30 * time.Second)
	err := try()
	for err == nil && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		err = try()
	}
	return err
}
