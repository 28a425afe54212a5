package jobtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

const ns = "default"

// The Job lifecycles of Volcano, each on its own Job, on one stack of two
// replicas with the stand-in admitting and binding.
func TestJobLifecycles(t *testing.T) {
	s := stack.Start(t, stack.Options{Replicas: 2, StandIn: true})
	// Once every case has ended (the parallel subtests end before the cleanups run), the
	// replicas must leave the cluster alone.
	t.Cleanup(func() { s.Quiet(t, 3*time.Second, 30*time.Second) })
	stack.RunParallel(t, s,
		stack.Case{Name: "runs to Completed", Run: runsToCompleted},
		stack.Case{Name: "PodFailed restarts until maxRetry then Failed", Run: restartsUntilFailed},
		stack.Case{Name: "exit code 3 aborts", Run: exitCodeAborts},
		stack.Case{Name: "TaskCompleted completes early", Run: taskCompletedCompletes},
		stack.Case{Name: "Command AbortJob then ResumeJob", Run: suspendResume},
		stack.Case{Name: "scale up and down", Run: scales},
		stack.Case{Name: "minSuccess", Run: minSuccess},
		stack.Case{Name: "dependsOn", Run: dependsOn},
		stack.Case{Name: "svc ssh env plugins", Run: pluginObjects},
		stack.Case{Name: "plugin names held by others", Run: pluginNamesHeld},
		stack.Case{Name: "a claim and a scaled svc task", Run: claimAndScaledHosts},
		stack.Case{Name: "TTL deletes the finished Job", Run: ttlDeletes},
	)
}

func runsToCompleted(t *testing.T, s *stack.Stack) {
	vcjob.Create(t, s.Volcano, vcjob.New(ns, "simple", vcjob.Task("master", 1, "2s", ""), vcjob.Task("worker", 3, "2s", "")))
	job := s.WaitPhase(ns, "simple", 90*time.Second, batch.Completed)
	if job.Status.Succeeded != 4 {
		t.Errorf("succeeded %d, want 4\n%s", job.Status.Succeeded, s.Describe(ns, "simple"))
	}
	if job.Spec.Queue != "default" || job.Spec.MinAvailable != 4 || job.Spec.MaxRetry != 3 {
		t.Errorf("defaults not applied: queue %q minAvailable %d maxRetry %d", job.Spec.Queue, job.Spec.MinAvailable, job.Spec.MaxRetry)
	}
	for _, p := range s.Pods(ns, "simple") {
		if p.Annotations["scheduling.k8s.io/group-name"] != "simple-"+string(job.UID) {
			t.Errorf("pod %s group-name %q", p.Name, p.Annotations["scheduling.k8s.io/group-name"])
		}
		if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != job.UID {
			t.Errorf("pod %s is not controlled by the job", p.Name)
		}
	}
	if len(s.Events(ns, "simple", "ExecuteAction")) != 0 {
		t.Errorf("a plain run executed actions: %v", s.Events(ns, "simple", "ExecuteAction"))
	}
	settles(t, s, "simple")
}

// settles checks that a finished Job is left alone: its resourceVersion stops changing (2 s
// without a write, looked for over 20 s). A controller that reacted to its own status writes
// bumped status.version of every finished Job about 20 times a second, for ever.
func settles(t *testing.T, s *stack.Stack, name string) {
	t.Helper()
	get := func() *batch.Job {
		job, err := s.Volcano.BatchV1alpha1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return job
	}
	first := get()
	last, since := first, time.Now()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if job := get(); job.ResourceVersion != last.ResourceVersion {
			last, since = job, time.Now()
		} else if time.Since(since) >= 2*time.Second {
			t.Logf("finished job %s settled at status.version %d (was %d when it finished)", name, last.Status.Version, first.Status.Version)
			return
		}
	}
	t.Errorf("finished job %s is still being written after 20 s: status.version %d, then %d", name, first.Status.Version, last.Status.Version)
}

func restartsUntilFailed(t *testing.T, s *stack.Stack) {
	job := vcjob.New(ns, "restarts", vcjob.Task("worker", 2, "1s", "1"))
	job.Spec.MaxRetry = 2
	job.Spec.Policies = []batch.LifecyclePolicy{{Event: bus.PodFailedEvent, Action: bus.RestartJobAction}}
	vcjob.Create(t, s.Volcano, job)
	got := s.WaitPhase(ns, "restarts", 120*time.Second, batch.Failed)
	if got.Status.RetryCount != 2 {
		t.Errorf("retryCount %d, want maxRetry 2\n%s", got.Status.RetryCount, s.Describe(ns, "restarts"))
	}
	if n := len(s.Events(ns, "restarts", "ExecuteAction")); n < 2 {
		t.Errorf("%d ExecuteAction events, want one per restart", n)
	}
}

func exitCodeAborts(t *testing.T, s *stack.Stack) {
	job := vcjob.New(ns, "aborts", vcjob.Task("worker", 2, "1s", "3"))
	job.Spec.Policies = []batch.LifecyclePolicy{{ExitCode: ptr(int32(3)), Action: bus.AbortJobAction}}
	vcjob.Create(t, s.Volcano, job)
	s.WaitPhase(ns, "aborts", 90*time.Second, batch.Aborted)
	if !contains(s.Events(ns, "aborts", "ExecuteAction"), "AbortJob") {
		t.Errorf("no ExecuteAction event naming AbortJob\n%s", s.Describe(ns, "aborts"))
	}
}

func taskCompletedCompletes(t *testing.T, s *stack.Stack) {
	master := vcjob.Task("master", 1, "2s", "")
	master.Policies = []batch.LifecyclePolicy{{Event: bus.TaskCompletedEvent, Action: bus.CompleteJobAction}}
	vcjob.Create(t, s.Volcano, vcjob.New(ns, "early", master, vcjob.Task("worker", 2, "10m", "")))
	s.WaitPhase(ns, "early", 90*time.Second, batch.Completed)
	stack.WaitUntil(t, "workers deleted", 60*time.Second, func() bool {
		for _, p := range s.Pods(ns, "early") {
			if p.Annotations[batch.TaskSpecKey] == "worker" && p.DeletionTimestamp == nil {
				return false
			}
		}
		return true
	})
}

func suspendResume(t *testing.T, s *stack.Stack) {
	job := vcjob.Create(t, s.Volcano, vcjob.New(ns, "suspend", vcjob.Task("worker", 2, "10m", "")))
	s.WaitPhase(ns, "suspend", 90*time.Second, batch.Running)
	command(t, s, job, "abort-1", bus.AbortJobAction)
	s.WaitPhase(ns, "suspend", 90*time.Second, batch.Aborted)
	command(t, s, job, "resume-1", bus.ResumeJobAction)
	s.WaitPhase(ns, "suspend", 90*time.Second, batch.Running)
	stack.WaitUntil(t, "commands deleted once taken", 30*time.Second, func() bool {
		list, err := s.Volcano.BusV1alpha1().Commands(ns).List(context.Background(), metav1.ListOptions{})
		return err == nil && len(list.Items) == 0
	})
	if len(s.Events(ns, "suspend", "CommandIssued")) != 2 {
		t.Errorf("CommandIssued events: %v", s.Events(ns, "suspend", "CommandIssued"))
	}
}

func scales(t *testing.T, s *stack.Stack) {
	job := vcjob.New(ns, "scale", vcjob.Task("worker", 2, "10m", ""))
	job.Spec.MinAvailable, job.Spec.Tasks[0].MinAvailable = 1, ptr(int32(1))
	vcjob.Create(t, s.Volcano, job)
	s.WaitPhase(ns, "scale", 90*time.Second, batch.Running)
	for _, want := range []int32{4, 1} {
		err := retryUpdate(s, "scale", func(j *batch.Job) { j.Spec.Tasks[0].Replicas = want })
		if err != nil {
			t.Fatal(err)
		}
		stack.WaitUntil(t, fmt.Sprintf("%d live pods", want), 60*time.Second, func() bool {
			live := int32(0)
			for _, p := range s.Pods(ns, "scale") {
				if p.DeletionTimestamp == nil {
					live++
				}
			}
			return live == want
		})
	}
}

func minSuccess(t *testing.T, s *stack.Stack) {
	job := vcjob.New(ns, "minsuccess", vcjob.Task("ok", 2, "1s", ""), vcjob.Task("bad", 2, "1s", "1"))
	job.Spec.MinAvailable, job.Spec.MinSuccess = 4, ptr(int32(2))
	vcjob.Create(t, s.Volcano, job)
	got := s.WaitPhase(ns, "minsuccess", 90*time.Second, batch.Completed, batch.Failed)
	if got.Status.State.Phase != batch.Completed {
		t.Errorf("phase %s, want Completed: 2 succeeded reach minSuccess 2\n%s", got.Status.State.Phase, s.Describe(ns, "minsuccess"))
	}
}

func dependsOn(t *testing.T, s *stack.Stack) {
	second := vcjob.Task("second", 2, "2s", "")
	second.DependsOn = &batch.DependsOn{Name: []string{"first"}}
	vcjob.Create(t, s.Volcano, vcjob.New(ns, "depends", vcjob.Task("first", 1, "3s", ""), second))
	stack.WaitUntil(t, "first running", 60*time.Second, func() bool {
		for _, p := range s.Pods(ns, "depends") {
			if p.Annotations[batch.TaskSpecKey] == "first" && p.Status.Phase == corev1.PodRunning {
				return true
			}
		}
		return false
	})
	s.WaitPhase(ns, "depends", 90*time.Second, batch.Completed)
	var firstRun, secondMade time.Time
	for _, p := range s.Pods(ns, "depends") {
		switch p.Annotations[batch.TaskSpecKey] {
		case "first":
			if p.Status.StartTime != nil {
				firstRun = p.Status.StartTime.Time
			}
		case "second":
			if secondMade.IsZero() || p.CreationTimestamp.Before(&metav1.Time{Time: secondMade}) {
				secondMade = p.CreationTimestamp.Time
			}
		}
	}
	if secondMade.Before(firstRun.Truncate(time.Second)) {
		t.Errorf("second task created at %v, before first ran at %v", secondMade, firstRun)
	}
}

func pluginObjects(t *testing.T, s *stack.Stack) {
	job := vcjob.New(ns, "plugins", vcjob.Task("master", 1, "10m", ""), vcjob.Task("worker", 2, "10m", ""))
	job.Spec.Plugins = map[string][]string{"svc": {}, "ssh": {}, "env": {}}
	vcjob.Create(t, s.Volcano, job)
	s.WaitPhase(ns, "plugins", 90*time.Second, batch.Running)
	ctx := context.Background()
	svc, err := s.Kube.CoreV1().Services(ns).Get(ctx, "plugins", metav1.GetOptions{})
	if err != nil || svc.Spec.ClusterIP != "None" {
		t.Errorf("headless service: %v %+v", err, svc)
	}
	cm, err := s.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "plugins-svc", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("hosts configmap: %v", err)
	}
	if got := cm.Data["worker.host"]; got != "plugins-worker-0.plugins\nplugins-worker-1.plugins" {
		t.Errorf("worker.host = %q", got)
	}
	if _, err := s.Kube.CoreV1().Secrets(ns).Get(ctx, "plugins-ssh", metav1.GetOptions{}); err != nil {
		t.Errorf("ssh secret: %v", err)
	}
	if _, err := s.Kube.NetworkingV1().NetworkPolicies(ns).Get(ctx, "plugins", metav1.GetOptions{}); err != nil {
		t.Errorf("network policy: %v", err)
	}
	pod, err := s.Kube.CoreV1().Pods(ns).Get(ctx, "plugins-worker-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env["VK_TASK_INDEX"] != "1" || env["VC_TASK_INDEX"] != "1" {
		t.Errorf("task index env: %v", env)
	}
	if pod.Spec.Hostname != "plugins-worker-1" || pod.Spec.Subdomain != "plugins" {
		t.Errorf("hostname %q subdomain %q", pod.Spec.Hostname, pod.Spec.Subdomain)
	}
}

func ttlDeletes(t *testing.T, s *stack.Stack) {
	job := vcjob.New(ns, "ttl", vcjob.Task("worker", 1, "1s", ""))
	job.Spec.TTLSecondsAfterFinished = ptr(int32(3))
	vcjob.Create(t, s.Volcano, job)
	s.WaitPhase(ns, "ttl", 90*time.Second, batch.Completed)
	stack.WaitUntil(t, "job deleted after its TTL", 60*time.Second, func() bool {
		_, err := s.Volcano.BatchV1alpha1().Jobs(ns).Get(context.Background(), "ttl", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	// Deleted in the foreground, as Volcano deletes it: the Job goes only once its pods have.
	if pods := s.Pods(ns, "ttl"); len(pods) != 0 {
		t.Errorf("the Job is gone but %d of its pods are still there: not a foreground deletion", len(pods))
	}
}

func command(t *testing.T, s *stack.Stack, job *batch.Job, name string, action bus.Action) {
	t.Helper()
	cmd := &bus.Command{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: job.Namespace},
		Action:     string(action),
		TargetObject: &metav1.OwnerReference{
			APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: job.Name, UID: types.UID(job.UID),
		},
	}
	if _, err := s.Volcano.BusV1alpha1().Commands(job.Namespace).Create(context.Background(), cmd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("command %s: %v", action, err)
	}
}

func retryUpdate(s *stack.Stack, name string, change func(*batch.Job)) error {
	var err error
	for range 10 {
		var job *batch.Job
		job, err = s.Volcano.BatchV1alpha1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(job)
		if _, err = s.Volcano.BatchV1alpha1().Jobs(ns).Update(context.Background(), job, metav1.UpdateOptions{}); err == nil || !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

func contains(msgs []string, sub string) bool {
	for _, m := range msgs {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }
