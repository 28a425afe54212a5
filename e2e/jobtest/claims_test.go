package jobtest

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/build"
	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// claimSpec is a volume claim of 1 GiB, read-write by one node.
func claimSpec() *corev1.PersistentVolumeClaimSpec {
	return &corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		},
	}
}

// A volume with a claim spec and no claim name gets a claim the Job makes and owns; the svc
// plugin's hosts ConfigMap follows a scaled task (the one object ringfire updates).
func claimAndScaledHosts(t *testing.T, s *stack.Stack) {
	ctx := context.Background()
	const name = "claimed"
	job := vcjob.New(ns, name, vcjob.Task("worker", 2, "10m", ""))
	job.Spec.MinAvailable, job.Spec.Tasks[0].MinAvailable = 1, ptr(int32(1))
	job.Spec.Plugins = map[string][]string{"svc": {}}
	job.Spec.Volumes = []batch.VolumeSpec{{MountPath: "/data", VolumeClaim: claimSpec()}}
	job = vcjob.Create(t, s.Volcano, job)
	s.WaitPhase(ns, name, 90*time.Second, batch.Running)

	pvc, err := s.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, build.PVCName(job, 0), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Job's claim: %v", err)
	}
	if !cache.ControlledBy(pvc, job.UID) {
		t.Errorf("the claim %s is not the Job's: %v", pvc.Name, metav1.GetControllerOf(pvc))
	}

	if err := retryUpdate(s, name, func(j *batch.Job) { j.Spec.Tasks[0].Replicas = 3 }); err != nil {
		t.Fatal(err)
	}
	stack.WaitFor(t, "the hosts ConfigMap lists 3 workers", 60*time.Second, func() (bool, string) {
		cm, err := s.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name+"-svc", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got := cm.Data["worker.host"]
		return len(strings.Split(got, "\n")) == 3, got
	})
}
