package plugins

import (
	"strconv"
	"strings"
	"testing"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/build"
	"github.com/ringfire/ringfire/controllers/job/state"
)

// maxObjectData is what the API server lets a ConfigMap or a Secret hold (corev1.MaxSecretSize).
const maxObjectData = 1 << 20

// longestNames is a Job of one task of replicas whose hosts have the longest names a pod of the
// svc plugin can have: its hostname, the pod name <job>-<task>-<index>, is a DNS label of at
// most 63 characters (the API server refuses a longer one), and the Job's name follows it as
// the subdomain.
func longestNames(taskName string, replicas int32) *batch.Job {
	job := testJob(task(taskName, replicas))
	job.Name = strings.Repeat("j", 63-len("--")-len(taskName)-len(strconv.Itoa(int(replicas-1))))
	return job
}

// lastPod is the name of the last pod of the Job's first task.
func lastPod(job *batch.Job) string {
	t := job.Spec.Tasks[0]
	return build.PodName(job.Name, t.Name, int(t.Replicas-1))
}

// The objects of the largest Job admitted with a plugin that lists every replica's host, under
// the longest names, fit in what the API server stores: this is what state.MaxReplicasListed
// is chosen for.
func TestLargestListingJobFits(t *testing.T) {
	job := longestNames("t", state.MaxReplicasListed)
	if pod := lastPod(job); len(pod) != 63 {
		t.Fatalf("the last pod is %q (%d characters), want 63", pod, len(pod))
	}
	size := 0
	for k, v := range Hosts(job) {
		size += len(k) + len(v)
	}
	t.Logf("svc's hosts ConfigMap of %d replicas: %d bytes of %d", state.MaxReplicasListed, size, maxObjectData)
	if size > maxObjectData {
		t.Errorf("svc's hosts ConfigMap holds %d bytes, over the API server's %d", size, maxObjectData)
	}
	keys, err := RSAKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	ssh := len(SSHConfig(job, 22)) + len(keys.PrivateKey) + 2*len(keys.PublicKey)
	t.Logf("ssh's Secret of %d replicas: %d bytes of %d", state.MaxReplicasListed, ssh, maxObjectData)
	if ssh > maxObjectData {
		t.Errorf("ssh's Secret holds %d bytes, over the API server's %d", ssh, maxObjectData)
	}
}

// TestLargestInPodJobCost measures what tensorflow writes into the pods of the largest Job it
// is admitted with, under the longest names: TF_CONFIG in each pod, and over all of them, the
// bytes the API server and the holder's cache keep. docs/jobs.md quotes the numbers.
func TestLargestInPodJobCost(t *testing.T) {
	job := longestNames("worker", state.MaxReplicasInPods) // a role TF_CONFIG lists
	if pod := lastPod(job); len(pod) != 63 {
		t.Fatalf("the last pod is %q (%d characters), want 63", pod, len(pod))
	}
	p := mustNew(t, "tensorflow")
	pod := podOf(t, job, "worker", state.MaxReplicasInPods-1)
	if err := p.OnPodCreate(pod, job); err != nil {
		t.Fatal(err)
	}
	perPod := len(envOf(pod.Spec.Containers[0])[EnvTFConfig])
	total := perPod * state.MaxReplicasInPods
	t.Logf("TF_CONFIG of %d replicas: %d KiB a pod, %d MiB over the Job", state.MaxReplicasInPods, perPod>>10, total>>20)
	if total > 256<<20 {
		t.Errorf("TF_CONFIG over the largest admitted Job is %d MiB", total>>20)
	}
}
