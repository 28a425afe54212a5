package monitoringtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/internal/localetcd"
)

const (
	prefix = "/monitoringtest"
	slots  = 256
	ns     = "default"
)

// world is the test's setting: a control plane with the Volcano CRDs, a
// ring etcd, and ringfire replicas as processes running every controller,
// the gang scheduler included, so that every metric the dashboard shows
// has data.
type world struct {
	cluster  *cluster.Cluster
	volcano  vcclient.Interface
	args     procs.Args
	replicas []*procs.Replica
}

// startWorld starts the control plane and the ring's etcd; start adds
// replicas.
func startWorld(t *testing.T, bin string) *world {
	t.Helper()
	log := hclog.New(&hclog.LoggerOptions{Name: "monitoringtest", Level: hclog.Warn, Output: os.Stderr})
	cl := cluster.StartForTest(t, cluster.Options{Nodes: 3, Logger: log.Named("cluster")})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := crds.Install(ctx, cl.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	cfg := cl.RESTConfig()
	cfg.QPS, cfg.Burst = 100, 100
	ring := localetcd.StartForTest(t)
	w := &world{
		cluster: cl, volcano: vcclient.NewForConfigOrDie(cfg),
		args: procs.Args{
			Bin: bin, Etcd: ring.Endpoint(), Prefix: prefix, Kubeconfig: cl.Kubeconfig(), LogDir: t.TempDir(),
			Slots: slots, Controllers: "job,queue,podgroup,cronjob,scheduler",
		},
	}
	t.Cleanup(func() {
		procs.StopAll(t, w.replicas)
		if t.Failed() { // to stderr, ahead of the failures (see cluster.StartForTest)
			for _, r := range w.replicas {
				fmt.Fprintf(os.Stderr, "=== %s failed: replica %s log tail:\n%s\n", t.Name(), r.ID, r.LogTail(30))
			}
		}
	})
	return w
}

// start starts the replicas named ids and waits until all replicas share
// the ring as assigned.
func (w *world) start(t *testing.T, ids ...string) {
	t.Helper()
	for _, id := range ids {
		w.replicas = append(w.replicas, procs.Start(t, w.args, id))
	}
	if err := procs.WaitRing(context.Background(), w.replicas, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// targets are the replicas as scrape targets.
func (w *world) targets() []target {
	var out []target
	for _, r := range w.replicas {
		out = append(out, target{addr: r.Addr, pod: r.ID})
	}
	return out
}

// podTemplate is a pod that runs for duration on a fake node and succeeds.
func podTemplate(duration string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{cluster.PodDurationAnnotation: duration}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "main", Image: "example.invalid/batch:latest",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
				}},
			}},
		},
	}
}

// jobSpec is a gang of a master and two workers.
func jobSpec() batch.JobSpec {
	return batch.JobSpec{
		SchedulerName: "volcano", Queue: "default",
		Tasks: []batch.TaskSpec{
			{Name: "master", Replicas: 1, Template: podTemplate("2s")},
			{Name: "worker", Replicas: 2, Template: podTemplate("2s")},
		},
	}
}

// submit creates n Jobs and a CronJob, and returns the Jobs' names.
func (w *world) submit(t *testing.T, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var names []string
	for i := range n {
		job := &batch.Job{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("mon-%02d", i), Namespace: ns}, Spec: jobSpec()}
		if _, err := w.volcano.BatchV1alpha1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create job %s: %v", job.Name, err)
		}
		names = append(names, job.Name)
	}
	// The CronJob gives its controller work; whether a minute boundary
	// falls within the test decides whether it starts a Job.
	cj := &batch.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "mon-cron", Namespace: ns},
		Spec: batch.CronJobSpec{
			Schedule:    "* * * * *",
			JobTemplate: batch.JobTemplateSpec{Spec: jobSpec()},
		},
	}
	if _, err := w.volcano.BatchV1alpha1().CronJobs(ns).Create(ctx, cj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create cronjob: %v", err)
	}
	return names
}

// phases returns how many of the named Jobs are in each phase.
func (w *world) phases(ctx context.Context, names []string) (map[batch.JobPhase]int, error) {
	list, err := w.volcano.BatchV1alpha1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[batch.JobPhase]int{}
	for _, j := range list.Items {
		if want[j.Name] {
			out[j.Status.State.Phase]++
		}
	}
	return out, nil
}

// exposition returns each live replica's /metrics.
func (w *world) exposition(t *testing.T) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := map[string]string{}
	for _, r := range w.replicas {
		if r.Exited() {
			continue
		}
		body, code, err := r.Get(ctx, "/metrics")
		if err != nil || code != 200 {
			t.Fatalf("%s /metrics: HTTP %d, %v", r.ID, code, err)
		}
		out[r.ID] = body
	}
	return out
}

// ruleFile writes the PrometheusRule's spec as a plain rule file.
func ruleFile(t *testing.T, dir string, content []byte) string {
	t.Helper()
	path := filepath.Join(dir, "ringfire.rules.json")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
