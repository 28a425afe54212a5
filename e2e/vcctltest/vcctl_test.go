package vcctltest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/e2e/sidebyside"
	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/volcano"
)

// The namespace of the Jobs vcctl runs with -n, besides default.
const otherNS = "vcctl"

// longJob is a Job for `vcctl job run -f`: two pods that run until deleted, in Queue q1.
const longJob = `apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: long
spec:
  minAvailable: 2
  queue: q1
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: main
          image: example.invalid/batch:latest
          command: ["sh", "-c", "sleep infinity"]
`

// TestVcctl runs the real vcctl's job and queue commands, one after another, against three
// ringfire replicas with the gang scheduler. The subtests share the cluster and build on each
// other (the Job that vcctl ran is the one it lists, suspends and deletes).
func TestVcctl(t *testing.T) {
	vcbin := volcano.Bin(t)
	env := sidebyside.StartRingfire(t, procs.Build(t))
	v := vcctl{bin: filepath.Join(vcbin, "vcctl"), kubeconfig: env.Cluster.Kubeconfig()}
	ctx := context.Background()
	if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: otherNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	seen := watchPhases(t, env)
	cmds := watchCommands(t, env)
	jobFile := filepath.Join(t.TempDir(), "long.yaml")
	if err := os.WriteFile(jobFile, []byte(longJob), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("queue create", func(t *testing.T) {
		out := v.run(t, "queue", "create", "-n", "q1", "-w", "3")
		q := waitQueueState(t, env, "q1", scheduling.QueueStateOpen)
		if q.Spec.Weight != 3 {
			t.Errorf("queue q1: weight %d, want 3 (vcctl said %q)", q.Spec.Weight, out)
		}
		// -S sets the state in the status of the create, which the API server drops (the
		// status is a subresource), as it does under Volcano: the queue controller opens it.
		v.run(t, "queue", "create", "-n", "q2", "-w", "2", "-S", "Closed")
		waitQueueState(t, env, "q2", scheduling.QueueStateOpen)
	})

	t.Run("queue list and get", func(t *testing.T) {
		list := v.run(t, "queue", "list")
		for name, weight := range map[string]string{"default": "1", "q1": "3", "q2": "2"} {
			if got := cell(t, list, name, "Weight"); got != weight {
				t.Errorf("queue list: %s weight %s, want %s:\n%s", name, got, weight, list)
			}
			if got := cell(t, list, name, "State"); got != "Open" {
				t.Errorf("queue list: %s state %s, want Open:\n%s", name, got, list)
			}
		}
		get := v.run(t, "queue", "get", "-n", "q1")
		if cell(t, get, "q1", "Weight") != "3" || row(get, 0, "q2") != nil || row(get, 0, "default") != nil {
			t.Errorf("queue get -n q1 should show q1 alone, of weight 3:\n%s", get)
		}
		if _, err := v.try("queue", "get", "-n", "nosuch"); err == nil {
			t.Error("queue get -n nosuch succeeded")
		}
	})

	t.Run("job run with flags", func(t *testing.T) {
		out := v.run(t, "job", "run", "-N", "flags", "-n", otherNS, "-r", "2", "--min", "2",
			"--requests", "cpu=500m,memory=64Mi", "--limits", "cpu=1,memory=128Mi",
			"-i", "example.invalid/flags:1", "-S", "volcano")
		if !strings.Contains(out, "run job flags successfully") {
			t.Errorf("job run printed %q", out)
		}
		job, err := env.Volcano.BatchV1alpha1().Jobs(otherNS).Get(ctx, "flags", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if job.Spec.MinAvailable != 2 || job.Spec.SchedulerName != "volcano" || job.Spec.Queue != "default" || len(job.Spec.Tasks) != 1 {
			t.Fatalf("job flags: minAvailable %d scheduler %q queue %q tasks %d; want 2, volcano, default (the default), 1",
				job.Spec.MinAvailable, job.Spec.SchedulerName, job.Spec.Queue, len(job.Spec.Tasks))
		}
		task := job.Spec.Tasks[0]
		c := task.Template.Spec.Containers[0]
		if task.Replicas != 2 || c.Image != "example.invalid/flags:1" ||
			!quantity(c.Resources.Requests, corev1.ResourceCPU, "500m") || !quantity(c.Resources.Requests, corev1.ResourceMemory, "64Mi") ||
			!quantity(c.Resources.Limits, corev1.ResourceCPU, "1") || !quantity(c.Resources.Limits, corev1.ResourceMemory, "128Mi") {
			t.Errorf("job flags: task %q replicas %d image %q resources %+v", task.Name, task.Replicas, c.Image, c.Resources)
		}
		// The pods have no command: on the fake nodes they run a second and succeed.
		done := waitPhase(t, env, otherNS, "flags", batch.Completed, time.Minute)
		if done.Status.Succeeded != 2 {
			t.Errorf("job flags completed with %d pods succeeded, want 2", done.Status.Succeeded)
		}
		t.Logf("job flags went through %v", seen.of(otherNS, "flags"))
	})

	t.Run("job run -f", func(t *testing.T) {
		out := v.run(t, "job", "run", "-f", jobFile)
		if !strings.Contains(out, "run job long successfully") {
			t.Errorf("job run -f printed %q", out)
		}
		waitPhase(t, env, "default", "long", batch.Running, time.Minute)
		pods := waitRunningPods(t, env, "default", "long", 2)
		for _, p := range pods {
			if p.Labels[batch.QueueNameKey] != "q1" || p.Spec.SchedulerName != "volcano" || p.Spec.NodeName == "" {
				t.Errorf("pod %s: queue label %q scheduler %q node %q; want q1, volcano, bound",
					p.Name, p.Labels[batch.QueueNameKey], p.Spec.SchedulerName, p.Spec.NodeName)
			}
		}
		if _, err := v.try("job", "run", "-f", jobFile); err == nil {
			t.Error("running the same Job file again succeeded")
		}
	})

	t.Run("job list", func(t *testing.T) {
		list := v.run(t, "job", "list")
		if cell(t, list, "long", "Phase") != "Running" || cell(t, list, "long", "Running") != "2" ||
			cell(t, list, "long", "Min") != "2" || cell(t, list, "long", "Replicas") != "2" {
			t.Errorf("job list: the row of long is not Running 2 of 2:\n%s", list)
		}
		if row(list, 0, "flags") != nil {
			t.Errorf("job list (namespace default) shows flags of namespace %s:\n%s", otherNS, list)
		}
		other := v.run(t, "job", "list", "-n", otherNS)
		if cell(t, other, "flags", "Phase") != "Completed" || cell(t, other, "flags", "Succeeded") != "2" {
			t.Errorf("job list -n %s: flags is not Completed with 2 succeeded:\n%s", otherNS, other)
		}
		all := v.run(t, "job", "list", "--all-namespaces")
		if row(all, 1, "long") == nil || row(all, 1, "flags") == nil {
			t.Errorf("job list --all-namespaces lacks long or flags:\n%s", all)
		}
		q1 := v.run(t, "job", "list", "-q", "q1")
		if row(q1, 0, "long") == nil {
			t.Errorf("job list -q q1 lacks long:\n%s", q1)
		}
		if q2 := v.run(t, "job", "list", "-q", "q2"); row(q2, 0, "long") != nil {
			t.Errorf("job list -q q2 shows long, of q1:\n%s", q2)
		}
	})

	t.Run("job view", func(t *testing.T) {
		view := v.run(t, "job", "view", "-N", "long")
		for _, want := range []string{"Name:       \tlong", "Namespace:  \tdefault", "Min Available:     \t2", "Phase:\tRunning", "Running:      \t2"} {
			if !strings.Contains(view, want) {
				t.Errorf("job view lacks %q:\n%s", want, view)
			}
		}
		if _, err := v.try("job", "view", "-N", "nosuch"); err == nil {
			t.Error("job view -N nosuch succeeded")
		}
	})

	t.Run("job suspend", func(t *testing.T) {
		before := len(seen.of("default", "long"))
		v.run(t, "job", "suspend", "-N", "long")
		cmds.waitTaken(t, "default", string(bus.AbortJobAction), "Job/long")
		waitPhase(t, env, "default", "long", batch.Aborted, 30*time.Second)
		waitNoPods(t, env, "default", "long", 30*time.Second)
		if got := seen.since("default", "long", before); !slices.Equal(got, []batch.JobPhase{batch.Aborting, batch.Aborted}) {
			t.Errorf("suspend: the Job went through %v, want [Aborting Aborted]", got)
		}
		if list := v.run(t, "job", "list"); cell(t, list, "long", "Phase") != "Aborted" {
			t.Errorf("job list after suspend:\n%s", list)
		}
		if reasons := jobEvents(t, env, "default", "long"); !slices.Contains(reasons, string(bus.CommandIssuedEvent)) {
			t.Errorf("no CommandIssued Event on the Job after suspend; Events: %v", reasons)
		}
	})

	t.Run("job resume", func(t *testing.T) {
		before := len(seen.of("default", "long"))
		v.run(t, "job", "resume", "-N", "long")
		cmds.waitTaken(t, "default", string(bus.ResumeJobAction), "Job/long")
		job := waitPhase(t, env, "default", "long", batch.Running, time.Minute)
		waitRunningPods(t, env, "default", "long", 2)
		if got, want := seen.since("default", "long", before), []batch.JobPhase{batch.Restarting, batch.Pending, batch.Running}; !slices.Equal(got, want) {
			t.Errorf("resume: the Job went through %v, want %v", got, want)
		}
		if job.Status.RetryCount != 1 {
			t.Errorf("retryCount %d after resume, want 1", job.Status.RetryCount)
		}
		if list := v.run(t, "job", "list"); cell(t, list, "long", "RetryCount") != "1" {
			t.Errorf("job list after resume does not show retry count 1:\n%s", list)
		}
	})

	t.Run("queue operate", func(t *testing.T) {
		// q1 holds long's PodGroup: closing it leaves it Closing until that is gone.
		v.run(t, "queue", "operate", "-n", "q1", "-a", "close")
		closed := cmds.waitTaken(t, "default", string(bus.CloseQueueAction), "Queue/q1")
		waitQueueState(t, env, "q1", scheduling.QueueStateClosing)
		// vcctl names the queue by its UID too, which the Queue controller checks.
		q1, err := env.Volcano.SchedulingV1beta1().Queues().Get(ctx, "q1", metav1.GetOptions{})
		switch {
		case err != nil:
			t.Errorf("get queue q1: %v", err)
		case closed.targetUID != q1.UID:
			t.Errorf("vcctl's CloseQueue names uid %q; queue q1 has %q", closed.targetUID, q1.UID)
		}
		if got := cell(t, v.run(t, "queue", "get", "-n", "q1"), "q1", "State"); got != "Closing" {
			t.Errorf("queue get after close: state %s, want Closing", got)
		}
		v.run(t, "queue", "operate", "-n", "q1", "-a", "open")
		cmds.waitTaken(t, "default", string(bus.OpenQueueAction), "Queue/q1")
		waitQueueState(t, env, "q1", scheduling.QueueStateOpen)
		// q2 holds nothing: it closes at once.
		v.run(t, "queue", "operate", "-n", "q2", "-a", "close")
		waitQueueState(t, env, "q2", scheduling.QueueStateClosed)
		v.run(t, "queue", "operate", "-n", "q1", "-a", "update", "-w", "7")
		q, err := env.Volcano.SchedulingV1beta1().Queues().Get(ctx, "q1", metav1.GetOptions{})
		if err != nil || q.Spec.Weight != 7 {
			t.Errorf("queue q1 after update -w 7: %v, weight %d", err, q.Spec.Weight)
		}
		list := v.run(t, "queue", "list")
		if cell(t, list, "q1", "Weight") != "7" || cell(t, list, "q1", "State") != "Open" || cell(t, list, "q2", "State") != "Closed" {
			t.Errorf("queue list after operate:\n%s", list)
		}
		if _, err := v.try("queue", "operate", "-n", "q1", "-a", "nosuch"); err == nil {
			t.Error("queue operate -a nosuch succeeded")
		}
	})

	t.Run("job delete", func(t *testing.T) {
		// Closing q1 again while long runs, then deleting long, lets q1 close.
		v.run(t, "queue", "operate", "-n", "q1", "-a", "close")
		waitQueueState(t, env, "q1", scheduling.QueueStateClosing)
		out := v.run(t, "job", "delete", "-N", "long")
		if !strings.Contains(out, "delete job long successfully") {
			t.Errorf("job delete printed %q", out)
		}
		stack.WaitFor(t, "job long gone", 30*time.Second, func() (bool, string) {
			_, err := env.Volcano.BatchV1alpha1().Jobs("default").Get(ctx, "long", metav1.GetOptions{})
			return apierrors.IsNotFound(err), ""
		})
		// The Job's pods and PodGroup go by the garbage collector (owner references), as under
		// Volcano. The collector learns of a new CRD when it next reads the API's discovery,
		// every 30 s, so on a control plane this young it may take that long to begin.
		deleted := time.Now()
		waitNoPods(t, env, "default", "long", 90*time.Second)
		t.Logf("the garbage collector deleted the Job's pods %v after the Job", time.Since(deleted).Round(time.Second))
		stack.WaitFor(t, "long's PodGroup gone", 30*time.Second, func() (bool, string) {
			pgs, err := env.Volcano.SchedulingV1beta1().PodGroups("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			return len(pgs.Items) == 0, "PodGroups left: " + pgNames(pgs.Items)
		})
		waitQueueState(t, env, "q1", scheduling.QueueStateClosed)
		if list := v.run(t, "job", "list"); !strings.Contains(list, "No resources found") {
			t.Errorf("job list after delete:\n%s", list)
		}
		if _, err := v.try("job", "delete", "-N", "long"); err == nil {
			t.Error("deleting long a second time succeeded")
		}
	})

	t.Run("queue delete", func(t *testing.T) {
		v.run(t, "queue", "delete", "-n", "q1")
		v.run(t, "queue", "delete", "-n", "q2")
		for _, name := range []string{"q1", "q2"} {
			if _, err := env.Volcano.SchedulingV1beta1().Queues().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("queue %s after delete: %v", name, err)
			}
		}
		list := v.run(t, "queue", "list")
		if row(list, 0, "q1") != nil || row(list, 0, "q2") != nil || row(list, 0, "default") == nil {
			t.Errorf("queue list after delete:\n%s", list)
		}
	})
}

// quantity reports whether list holds name at the quantity want.
func quantity(list corev1.ResourceList, name corev1.ResourceName, want string) bool {
	got, ok := list[name]
	return ok && got.Cmp(resource.MustParse(want)) == 0
}

func pgNames(pgs []scheduling.PodGroup) string {
	var names []string
	for _, pg := range pgs {
		names = append(names, pg.Name)
	}
	return strings.Join(names, " ")
}
