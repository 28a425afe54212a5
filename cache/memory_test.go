package cache

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// StripManagedFields drops an object's managed fields and nothing else, and leaves what is not
// an object (a tombstone) alone; SlimBatchJob drops them from the batch/v1 Jobs ringfire
// manages, which it keeps whole otherwise.
func TestStripManagedFields(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "p", Namespace: "ns", Labels: map[string]string{"a": "b"},
		Annotations:   map[string]string{lastApplied: "{}"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "ringfire", Operation: metav1.ManagedFieldsOperationUpdate}},
	}}
	got, err := StripManagedFields(pod)
	if err != nil || got != any(pod) {
		t.Fatalf("got %v, %v; want the pod itself", got, err)
	}
	if pod.ManagedFields != nil || pod.Labels["a"] != "b" || pod.Annotations[lastApplied] != "{}" {
		t.Fatalf("stripped pod: %+v", pod.ObjectMeta)
	}
	tomb := toolscache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}
	if got, err := StripManagedFields(tomb); err != nil || got != any(tomb) {
		t.Fatalf("tombstone: %v, %v", got, err)
	}

	managedBy := BatchJobManager
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec:       batchv1.JobSpec{ManagedBy: &managedBy, Parallelism: new(int32(3))},
	}
	got, _ = SlimBatchJob(job)
	if kept := got.(*batchv1.Job); kept.ManagedFields != nil || kept.Spec.Parallelism == nil {
		t.Fatalf("a Job ringfire manages: %+v", kept)
	}
}
