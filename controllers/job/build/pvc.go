package build

import (
	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// PVC is the claim to create for the volume at index of job.spec.volumes, or nil when there is
// none to create: the volume names its own claim (Volcano only checks that it exists), has no
// volumeClaim spec to make one from, or index is out of range. The claim is named PVCName and
// owned by job.
func PVC(job *batch.Job, index int, slot int) *corev1.PersistentVolumeClaim {
	if index < 0 || index >= len(job.Spec.Volumes) {
		return nil
	}
	v := job.Spec.Volumes[index]
	if v.VolumeClaimName != "" || v.VolumeClaim == nil {
		return nil
	}
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: OwnedMeta(job, PVCName(job, index), slot),
		Spec:       *v.VolumeClaim.DeepCopy(),
	}
}
