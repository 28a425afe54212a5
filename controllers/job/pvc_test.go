package job

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/build"
	"github.com/ringfire/ringfire/controllers/job/plan"
	"github.com/ringfire/ringfire/controllers/job/state"
)

// A volume with a claim spec and no claim name gets its claim; one that names its claim, as
// the volumes vc-controller-manager wrote its generated names back into do (beside their
// claim spec), is only mounted: nothing is created for it.
func TestSyncPVCsCreatesOnlyUnnamedClaims(t *testing.T) {
	job := testJob("vols", task("worker", 1))
	job.UID = types.UID("uid-vols")
	spec := &corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}
	job.Spec.Volumes = []batch.VolumeSpec{
		{MountPath: "/a", VolumeClaim: spec},
		{MountPath: "/b", VolumeClaimName: "vols-x7k2m9q4ab1c", VolumeClaim: spec},
		{MountPath: "/c", VolumeClaimName: "users-claim"},
	}
	f := newFixture(t, nil, job)
	in := f.c.planInput("ns/vols", f.c.defaulted(job), &cache.JobInfo{Job: job}, state.Request{}, bus.SyncJobAction)
	if err := f.c.createPVCs(context.Background(), "ns/vols", job, plan.Make(in).CreatePVCs); err != nil {
		t.Fatal(err)
	}
	if got, want := creates(f.kube, "persistentvolumeclaims"), []string{build.PVCName(job, 0)}; !slices.Equal(got, want) {
		t.Errorf("created claims %v, want %v", got, want)
	}
}
