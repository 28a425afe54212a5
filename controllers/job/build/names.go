package build

import (
	"crypto/sha256"
	"strconv"
	"strings"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/shard"
)

// SlotLabel is the label on every object a Job owns: the decimal ring slot of the Job's key.
const SlotLabel = shard.SlotLabel

// maxVolumeNameLength is the limit of a DNS-1123 label, which a pod volume name must be.
const maxVolumeNameLength = 63

// PodName is the name of the pod at index of task in job: <job>-<task>-<index>.
func PodName(job, task string, index int) string {
	return job + "-" + task + "-" + strconv.Itoa(index)
}

// IsPodOf reports whether name is the name of one of the task's replicas: PodName(job, task.Name,
// i) for some i below its replicas. It reads the index back from the name, so that telling the
// pods the spec wants from the surplus costs nothing in proportion to the replicas.
func IsPodOf(job string, task *batch.TaskSpec, name string) bool {
	digits, ok := strings.CutPrefix(name, job+"-"+task.Name+"-")
	if !ok {
		return false
	}
	index, err := strconv.Atoi(digits)
	return err == nil && index >= 0 && index < int(task.Replicas) && strconv.Itoa(index) == digits
}

// PodGroupName is the name of the PodGroup of job: <job>-<job.uid>. The UID keeps a Job re-created
// under the same name from adopting its predecessor's PodGroup.
func PodGroupName(job *batch.Job) string {
	return job.Name + "-" + string(job.UID)
}

// PVCName is the claim ringfire creates for the volume at index of job.spec.volumes when it names
// none: <job>-pvc-<12 characters of [0-9a-z]> taken from the Job's UID and the index.
func PVCName(job *batch.Job, index int) string {
	return job.Name + "-pvc-" + shortHash(string(job.UID)+"/"+strconv.Itoa(index))
}

// ClaimName is the claim the volume at index of job.spec.volumes mounts: its volumeClaimName, or
// PVCName when it has none. It is "" when index is out of range.
func ClaimName(job *batch.Job, index int) string {
	if index < 0 || index >= len(job.Spec.Volumes) {
		return ""
	}
	if name := job.Spec.Volumes[index].VolumeClaimName; name != "" {
		return name
	}
	return PVCName(job, index)
}

// volumeName is the name of the pod volume that mounts claim: <job>-<12 characters>, cut to fit a
// DNS-1123 label.
func volumeName(job, claim string) string {
	suffix := "-" + shortHash(claim)
	if len(job)+len(suffix) > maxVolumeNameLength {
		job = job[:maxVolumeNameLength-len(suffix)]
	}
	return job + suffix
}

// shortHash is 12 characters of [0-9a-z] derived from s, in the alphabet and length of the random
// suffixes Volcano draws.
func shortHash(s string) string {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
	sum := sha256.Sum256([]byte(s))
	out := make([]byte, 12)
	for i := range out {
		out[i] = alphabet[int(sum[i])%len(alphabet)]
	}
	return string(out)
}
