package plugins

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/build"
)

const testSlot = 5

// testJob is Job ns/train (uid u-1) with the given tasks, each a template of one container "main"
// and one init container "init".
func testJob(tasks ...batch.TaskSpec) *batch.Job {
	for i := range tasks {
		tasks[i].Template.Spec.Containers = []corev1.Container{{Name: "main", Image: "img"}}
		tasks[i].Template.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "img"}}
	}
	return &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ns", UID: "u-1"},
		Spec:       batch.JobSpec{Queue: "default", Tasks: tasks, Plugins: map[string][]string{}},
	}
}

func task(name string, replicas int32) batch.TaskSpec {
	return batch.TaskSpec{Name: name, Replicas: replicas}
}

// podOf builds the pod at index of the task named name, as the controller would.
func podOf(t *testing.T, job *batch.Job, name string, index int) *corev1.Pod {
	t.Helper()
	for i := range job.Spec.Tasks {
		if job.Spec.Tasks[i].Name == name {
			return build.Pod(job, &job.Spec.Tasks[i], index, testSlot)
		}
	}
	t.Fatalf("no task %s", name)
	return nil
}

// mustNew builds plugin name with args, failing the test on an error.
func mustNew(t *testing.T, name string, args ...string) Plugin {
	t.Helper()
	p, err := New(name, args, Env{Slot: testSlot, NewSSHKey: fixedKeys})
	if err != nil {
		t.Fatalf("New(%s, %q): %v", name, args, err)
	}
	return p
}

// fixedKeys stands in for key generation, so Secrets can be compared byte for byte.
func fixedKeys() (KeyPair, error) {
	return KeyPair{PrivateKey: []byte("PRIVATE\n"), PublicKey: []byte("ssh-rsa PUBLIC\n")}, nil
}

func envOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

func equal(t *testing.T, what string, got, want any) {
	t.Helper()
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

// owned checks that obj is owned by job and carries the slot label.
func owned(t *testing.T, obj Object, job *batch.Job) {
	t.Helper()
	refs := obj.GetOwnerReferences()
	if len(refs) != 1 || !equality.Semantic.DeepEqual(refs[0], build.OwnerReference(job)) {
		t.Errorf("%s %s: owner references %+v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), refs)
	}
	if obj.GetLabels()[build.SlotLabel] != "5" || obj.GetNamespace() != job.Namespace {
		t.Errorf("%s %s: namespace %q labels %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), obj.GetNamespace(), obj.GetLabels())
	}
}
