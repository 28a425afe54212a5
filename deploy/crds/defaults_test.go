package crds_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	"volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
)

// TestJobDefaultsAtAdmission creates Jobs that leave the computed defaults unset on a real API
// server and checks that it stores each with exactly the spec the Job controller's own defaults
// (state.Defaults, Volcano's mutating webhook) give it: the policy that spares the controller a
// write per Job must agree with the controller.
func TestJobDefaultsAtAdmission(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{Nodes: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if ok, err := crds.ServesJobDefaults(c.RESTConfig()); err != nil || !ok {
		t.Fatalf("the API server does not serve MutatingAdmissionPolicies (%v): the tools' kube-apiserver should", err)
	}
	if err := crds.Install(ctx, c.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	vc, err := versioned.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	bare := func(name string, replicas int32) batchv1alpha1.TaskSpec {
		tk := task(name, replicas)
		tk.Policies = nil
		return tk
	}
	hostNet := bare("", 2)
	hostNet.Template.Spec.HostNetwork = true
	explicit := bare("w", 4)
	explicit.MinAvailable, explicit.MaxRetry = ptr.To[int32](1), 5
	jobs := map[string]batchv1alpha1.JobSpec{
		"all-unset":      {Tasks: []batchv1alpha1.TaskSpec{bare("", 1), bare("", 3)}},
		"named-tasks":    {Tasks: []batchv1alpha1.TaskSpec{bare("master", 1), bare("worker", 2)}},
		"host-network":   {Tasks: []batchv1alpha1.TaskSpec{hostNet}},
		"explicit":       {MinAvailable: 2, MaxRetry: 7, Queue: "default", Tasks: []batchv1alpha1.TaskSpec{explicit, bare("x", 2)}},
		"task-minimums":  {Tasks: []batchv1alpha1.TaskSpec{explicit, bare("x", 2)}},
		"zero-replicas":  {Tasks: []batchv1alpha1.TaskSpec{bare("idle", 0)}},
		"mpi":            {Tasks: []batchv1alpha1.TaskSpec{bare("mpimaster", 1), bare("mpiworker", 2)}, Plugins: map[string][]string{"mpi": {}}},
		"pytorch-svc":    {Tasks: []batchv1alpha1.TaskSpec{bare("master", 1), bare("worker", 1)}, Plugins: map[string][]string{"pytorch": {"--port=23456"}, "svc": {"--publish-not-ready-addresses"}}},
		"tensorflow-ssh": {Tasks: []batchv1alpha1.TaskSpec{bare("ps", 1), bare("worker", 1)}, Plugins: map[string][]string{"tensorflow": {}, "ssh": {}}},
	}
	for name, spec := range jobs {
		t.Run(name, func(t *testing.T) {
			job := &batchv1alpha1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: spec}
			got, err := vc.BatchV1alpha1().Jobs(namespace).Create(ctx, job, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// What the controller makes of the stored Job must be what is stored: nothing left
			// to default.
			want := got.DeepCopy()
			if set := state.Defaults(want); len(set) > 0 {
				t.Errorf("the API server left %v to default", set)
			}
			if !equality.Semantic.DeepEqual(got.Spec, want.Spec) {
				t.Errorf("stored spec differs from the controller's defaults")
			}
			// And it is what the controller makes of the Job as submitted (with the CRD's
			// static defaults, which the server applies first).
			submitted := job.DeepCopy()
			submitted.Spec.SchedulerName, submitted.Spec.Queue = got.Spec.SchedulerName, got.Spec.Queue
			state.Defaults(submitted)
			if submitted.Spec.MinAvailable != got.Spec.MinAvailable || submitted.Spec.MaxRetry != got.Spec.MaxRetry {
				t.Errorf("minAvailable %d maxRetry %d stored, the controller would set %d and %d",
					got.Spec.MinAvailable, got.Spec.MaxRetry, submitted.Spec.MinAvailable, submitted.Spec.MaxRetry)
			}
			for i := range submitted.Spec.Tasks {
				w, g := submitted.Spec.Tasks[i], got.Spec.Tasks[i]
				if w.Name != g.Name || *w.MinAvailable != ptr.Deref(g.MinAvailable, -1) || w.MaxRetry != g.MaxRetry ||
					w.Template.Spec.DNSPolicy != g.Template.Spec.DNSPolicy {
					t.Errorf("task %d stored as name %q minAvailable %v maxRetry %d dnsPolicy %q; the controller would set %q %d %d %q",
						i, g.Name, ptr.Deref(g.MinAvailable, -1), g.MaxRetry, g.Template.Spec.DNSPolicy,
						w.Name, *w.MinAvailable, w.MaxRetry, w.Template.Spec.DNSPolicy)
				}
			}
			if !equality.Semantic.DeepEqual(submitted.Spec.Plugins, got.Spec.Plugins) {
				t.Errorf("plugins stored %v, the controller would set %v", got.Spec.Plugins, submitted.Spec.Plugins)
			}
		})
	}
}
