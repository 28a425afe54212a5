package plan

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/controllers/job/build"
	"github.com/ringfire/ringfire/controllers/job/state"
)

// bigTemplate is a task of replicas whose template's spec holds 20,000 environment variables
// (about 1 MiB as JSON): inside every limit on its metadata, bounded only by the API server's
// limit on an object. A copy of it is a copy of the list (strings are shared), 0.9 MiB.
func bigTemplate(replicas int32) batch.TaskSpec {
	t := task("w", replicas)
	env := make([]corev1.EnvVar, 20000)
	for i := range env {
		env[i] = corev1.EnvVar{Name: "V" + strconv.Itoa(i), Value: strings.Repeat("x", 32)}
	}
	t.Template.Spec.Containers[0].Env = env
	return t
}

// A plan names the pods it creates and builds none of them but one of each task, for the
// plugins' errors: making the plan of a batch of 256 pods of a 1 MiB template allocates a
// few MiB, not the 256 copies of the template a batch built whole held at once (measured here
// for comparison). The pods are built one at a time by Build, each
// as build.Pod and the plugins make it.
func TestMakeBuildsNoBatchOfPods(t *testing.T) {
	job := newJob(batch.Pending, bigTemplate(400))
	job.Spec.Plugins = map[string][]string{"env": nil, "svc": nil}
	in := world{job: job, pg: scheduling.PodGroupInqueue}.input(bus.SyncJobAction, state.Request{}, flight{})
	Make(in) // the plugins' first parse, whatever it caches, out of the count

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p := Make(in)
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("the plan of %d creates of a 1 MiB template allocated %.1f MiB", p.CreatePods.Len(), float64(allocated)/(1<<20))
	if p.CreatePods.Len() != MaxCreateBatch {
		t.Fatalf("%d creates, want a batch of %d", p.CreatePods.Len(), MaxCreateBatch)
	}
	if allocated > 8<<20 {
		t.Errorf("the plan allocated %d MiB: it builds the pods it creates", allocated>>20)
	}
	if p.CreatePods.Built() != 0 {
		t.Errorf("%d pods built by the plan", p.CreatePods.Built())
	}
	runtime.GC()
	runtime.ReadMemStats(&before)
	whole := make([]*corev1.Pod, 0, MaxCreateBatch)
	for i := range MaxCreateBatch {
		whole = append(whole, build.Pod(job, &job.Spec.Tasks[0], i, 0))
	}
	runtime.ReadMemStats(&after)
	t.Logf("the same batch built whole: %.0f MiB", float64(after.TotalAlloc-before.TotalAlloc)/(1<<20))
	runtime.KeepAlive(whole)

	// Built, a pod is what build.Pod and the plugins make of it.
	name := p.CreatePods.Name(3)
	pod, err := p.CreatePods.Build(3)
	if err != nil {
		t.Fatal(err)
	}
	index := name[strings.LastIndex(name, "-")+1:]
	if pod.Name != name || pod.Labels[batch.TaskIndex] != index {
		t.Errorf("pod 3 is %s of index %s, named %s", pod.Name, pod.Labels[batch.TaskIndex], name)
	}
	env := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env["VK_TASK_INDEX"] != index || env["V19999"] == "" {
		t.Errorf("pod 3 lacks the env plugin's index or its template's environment: VK_TASK_INDEX %q, %d variables", env["VK_TASK_INDEX"], len(env))
	}
	if p.CreatePods.Built() != 1 {
		t.Errorf("built %d, want 1", p.CreatePods.Built())
	}
}

// The pods are built from the Job as the sync saw it: the rest of the plan changing the Job's
// status does not reach them.
func TestPodCreatesKeepTheSyncsJob(t *testing.T) {
	job := newJob(batch.Pending, task("w", 2))
	in := world{job: job, pg: scheduling.PodGroupInqueue}.input(bus.SyncJobAction, state.Request{}, flight{})
	p := Make(in)
	job.Status.Version = 99
	pod, err := p.CreatePods.Build(0)
	if err != nil {
		t.Fatal(err)
	}
	if v := pod.Annotations[batch.JobVersion]; v != "2" {
		t.Errorf("pod built at version %s, want the sync's 2", v)
	}
	if pod.Status.Phase != "" || pod.Labels[build.SlotLabel] == "" {
		t.Errorf("pod %+v", pod.ObjectMeta)
	}
}
