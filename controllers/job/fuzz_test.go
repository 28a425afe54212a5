package job

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
)

// FuzzPodRequest: whatever a pod in a Job's slot carries in its controller reference and its
// job-name, job-version and task annotations (a pod forged with the slot's label may carry
// anything), reading the request its event makes never panics; a request read names the pod's
// namespace and a version that is the annotation's, within int32, never one wrapped around.
func FuzzPodRequest(f *testing.F) {
	for _, v := range []string{"0", "3", "-1", "", "x", "2147483647", "2147483648", "4294967299", "+1", "007"} {
		f.Add("Job", "train", "", v, "worker")
	}
	f.Add("Job", "train", "other", "1", "")
	f.Add("Pod", "p", "", "1", "t")
	f.Add("", "", "", "", "")
	f.Fuzz(func(t *testing.T, kind, owner, jobName, version, task string) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "p",
			OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: owner, UID: "u", Controller: ptr.To(true)}},
			Annotations:     map[string]string{batch.JobNameKey: jobName, batch.JobVersion: version, batch.TaskSpecKey: task},
		}}
		key, req, ok := podRequest(pod, bus.PodFailedEvent)
		if got := jobKeyOfPod(pod); got != key {
			t.Fatalf("jobKeyOfPod = %q, podRequest's key %q", got, key)
		}
		if !ok {
			return
		}
		name := jobName
		if name == "" {
			name = owner
		}
		if key != "ns/"+name {
			t.Fatalf("key %q for a pod of Job %q", key, name)
		}
		if v, err := strconv.ParseInt(version, 10, 64); err != nil || int64(req.JobVersion) != v {
			t.Fatalf("version %q read as %d", version, req.JobVersion)
		}
	})
}
