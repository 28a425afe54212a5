package build

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// jobKind is the kind of the owner every built object refers to.
var jobKind = batch.SchemeGroupVersion.WithKind("Job")

// OwnerReference is the controller reference to job that every object it owns carries, with
// blockOwnerDeletion set, so that the garbage collector deletes them with it.
func OwnerReference(job *batch.Job) metav1.OwnerReference {
	return *metav1.NewControllerRef(job, jobKind)
}

// OwnedMeta is the metadata of an object named name that job owns: job's namespace, the controller
// reference, and SlotLabel set to slot.
func OwnedMeta(job *batch.Job, name string, slot int) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       job.Namespace,
		Labels:          map[string]string{SlotLabel: strconv.Itoa(slot)},
		OwnerReferences: []metav1.OwnerReference{OwnerReference(job)},
	}
}
