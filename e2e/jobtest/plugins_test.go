package jobtest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/plugins"
	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// The plugins that set up frameworks (ray, hcclrank, pytorch's wait for the
// master), the arguments Volcano skips, and TaskFailed, each on its own Job,
// on one stack of one replica with the stand-in admitting and binding: what
// they leave on the real API server.
func TestPluginsAndTaskFailed(t *testing.T) {
	s := stack.Start(t, stack.Options{Replicas: 1, StandIn: true})
	t.Cleanup(func() { s.Quiet(t, 3*time.Second, 30*time.Second) })
	stack.RunParallel(t, s,
		stack.Case{Name: "ray head Service, commands and ports", Run: rayCluster},
		stack.Case{Name: "hcclrank annotations", Run: hcclRanks},
		stack.Case{Name: "pytorch wait-for-master and ssh port", Run: pytorchWaitsForMaster},
		stack.Case{Name: "skipped arguments are told, the Job runs", Run: skippedArguments},
		stack.Case{Name: "TaskFailed after maxRetry restarts terminates", Run: taskFailedTerminates},
	)
}

func getPod(t *testing.T, s *stack.Stack, name string) *corev1.Pod {
	t.Helper()
	pod, err := s.Kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pod %s: %v", name, err)
	}
	return pod
}

func equalJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("%s:\n got  %s\n want %s", what, g, w)
	}
}

func rayCluster(t *testing.T, s *stack.Stack) {
	head, worker := vcjob.Task("head", 1, "10m", ""), vcjob.Task("worker", 2, "10m", "")
	head.Template.Spec.Containers[0].Name = "head"
	worker.Template.Spec.Containers[0].Name = "worker"
	job := vcjob.New(ns, "ray", head, worker)
	job.Spec.Plugins = map[string][]string{"ray": {"--port=7000"}, "svc": {}}
	vcjob.Create(t, s.Volcano, job)
	s.WaitPhase(ns, "ray", 90*time.Second, batch.Running)

	svc, err := s.Kube.CoreV1().Services(ns).Get(context.Background(), "ray-head-svc", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("head Service: %v", err)
	}
	port := func(name string, n int32) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Port: n, TargetPort: intstr.FromString(name), Protocol: corev1.ProtocolTCP}
	}
	equalJSON(t, "head Service ports", svc.Spec.Ports, []corev1.ServicePort{
		port("gcs", 7000), port("dashboard", 8265), port("client-server", 10001),
	})
	equalJSON(t, "head Service selector", svc.Spec.Selector, map[string]string{
		"volcano.sh/job-name": "ray", "volcano.sh/job-namespace": ns, "volcano.sh/task-spec": "head",
	})
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		t.Errorf("head Service cluster IP %q, want one allocated", svc.Spec.ClusterIP)
	}

	c := getPod(t, s, "ray-head-0").Spec.Containers[0]
	equalJSON(t, "head command", c.Command, []string{"sh", "-c",
		"ray start --head --block --dashboard-host=0.0.0.0 --port=7000 --dashboard-port=8265 --ray-client-server-port=10001"})
	equalJSON(t, "head ports", c.Ports, []corev1.ContainerPort{
		{Name: "gcs", ContainerPort: 7000, Protocol: corev1.ProtocolTCP},
		{Name: "dashboard", ContainerPort: 8265, Protocol: corev1.ProtocolTCP},
		{Name: "client-server", ContainerPort: 10001, Protocol: corev1.ProtocolTCP},
	})
	w := getPod(t, s, "ray-worker-1")
	equalJSON(t, "worker command", w.Spec.Containers[0].Command,
		[]string{"sh", "-c", "ray start --block --address=ray-head-0.ray:7000"})
	if w.Spec.Hostname != "ray-worker-1" || w.Spec.Subdomain != "ray" {
		t.Errorf("worker hostname %q subdomain %q: the svc plugin's", w.Spec.Hostname, w.Spec.Subdomain)
	}
}

func hcclRanks(t *testing.T, s *stack.Stack) {
	ranked := vcjob.Task("ranked", 1, "10m", "")
	ranked.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RANK", Value: "7"}}
	job := vcjob.New(ns, "hccl",
		vcjob.Task("master", 2, "10m", ""), vcjob.Task("worker", 2, "10m", ""), vcjob.Task("other", 1, "10m", ""), ranked)
	job.Spec.Plugins = map[string][]string{"hcclrank": {}}
	vcjob.Create(t, s.Volcano, job)
	s.WaitPhase(ns, "hccl", 90*time.Second, batch.Running)
	for pod, want := range map[string]string{
		"hccl-master-0": "0", "hccl-master-1": "1", "hccl-worker-0": "2", "hccl-worker-1": "3", "hccl-other-0": "", "hccl-ranked-0": "7",
	} {
		if got := getPod(t, s, pod).Annotations[plugins.HCCLRankAnnotation]; got != want {
			t.Errorf("%s: %s = %q, want %q", pod, plugins.HCCLRankAnnotation, got, want)
		}
	}
}

func pytorchWaitsForMaster(t *testing.T, s *stack.Stack) {
	job := vcjob.New(ns, "torch", vcjob.Task("master", 1, "10m", ""), vcjob.Task("worker", 2, "10m", ""))
	job.Spec.Plugins = map[string][]string{
		"pytorch": {"--wait-master-enabled", "--wait-master-timeout=60"}, "ssh": {"--ssh-port=2222"},
	}
	vcjob.Create(t, s.Volcano, job)
	s.WaitPhase(ns, "torch", 90*time.Second, batch.Running)

	inits := getPod(t, s, "torch-worker-1").Spec.InitContainers
	if len(inits) != 1 {
		t.Fatalf("worker init containers %+v, want wait-for-master", inits)
	}
	w := inits[0]
	if w.Name != "wait-for-master" || w.Image != "busybox:1.36.1" || w.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("wait-for-master: name %q image %q pull %q", w.Name, w.Image, w.ImagePullPolicy)
	}
	equalJSON(t, "wait-for-master command", w.Command,
		[]string{"sh", "-c", plugins.WaitForMasterScript("torch-master-0.torch", 23456, 60)})
	if n := len(getPod(t, s, "torch-master-0").Spec.InitContainers); n != 0 {
		t.Errorf("the master has %d init containers, want none", n)
	}

	secret, err := s.Kube.CoreV1().Secrets(ns).Get(context.Background(), "torch-ssh", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ssh Secret: %v", err)
	}
	config := string(secret.Data["config"])
	if !strings.Contains(config, "Host torch-worker-1\n  HostName torch-worker-1.torch\n  Port 2222\n") {
		t.Errorf("ssh config without the port:\n%s", config)
	}
}

// Arguments Volcano skips are skipped: the flags before them act, the Job
// runs, and a Warning Event tells what was left out.
func skippedArguments(t *testing.T, s *stack.Stack) {
	job := vcjob.New(ns, "skipped", vcjob.Task("worker", 2, "10m", ""))
	job.Spec.Plugins = map[string][]string{"svc": {"--disable-network-policy", "--no-such-flag", "--publish-not-ready-addresses"}}
	vcjob.Create(t, s.Volcano, job)
	s.WaitPhase(ns, "skipped", 90*time.Second, batch.Running)
	if msgs := s.Events(ns, "skipped", "PluginArgumentsIgnored"); len(msgs) != 1 ||
		!strings.Contains(msgs[0], "plugin svc: flag provided but not defined: -no-such-flag") {
		t.Errorf("PluginArgumentsIgnored events %q, want one naming -no-such-flag", msgs)
	}
	svc, err := s.Kube.CoreV1().Services(ns).Get(context.Background(), "skipped", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Service: %v", err)
	}
	if svc.Spec.PublishNotReadyAddresses {
		t.Errorf("--publish-not-ready-addresses, after the unknown flag, took effect")
	}
	if nps, _ := s.Kube.NetworkingV1().NetworkPolicies(ns).List(context.Background(), metav1.ListOptions{}); nps != nil {
		for _, np := range nps.Items {
			if np.Name == "skipped" {
				t.Errorf("a NetworkPolicy despite --disable-network-policy")
			}
		}
	}
}

// setRestarts sets the restart count of the pod's container through the
// status subresource, as a kubelet reports restarts.
func setRestarts(t *testing.T, s *stack.Stack, name string, n int32) {
	t.Helper()
	pod := getPod(t, s, name)
	statuses := pod.Status.ContainerStatuses
	if len(statuses) == 0 {
		statuses = []corev1.ContainerStatus{{Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image}}
	}
	statuses[0].RestartCount = n
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"containerStatuses": statuses}})
	if _, err := s.Kube.CoreV1().Pods(ns).Patch(context.Background(), name, types.MergePatchType, patch,
		metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("patch the restarts of %s: %v", name, err)
	}
}

// A task policy TaskFailed → TerminateJob fires once the task's pods have
// restarted maxRetry times between them; a task below its maxRetry keeps
// running.
func taskFailedTerminates(t *testing.T, s *stack.Stack) {
	policy := []batch.LifecyclePolicy{{Event: bus.TaskFailedEvent, Action: bus.TerminateJobAction}}
	failing := vcjob.Task("t", 2, "10m", "")
	failing.MaxRetry, failing.Policies = 2, policy
	vcjob.Create(t, s.Volcano, vcjob.New(ns, "taskfailed", failing))
	below := vcjob.Task("t", 2, "10m", "")
	below.MaxRetry, below.Policies = 3, policy
	vcjob.Create(t, s.Volcano, vcjob.New(ns, "taskbelow", below))
	s.WaitPhase(ns, "taskfailed", 90*time.Second, batch.Running)
	s.WaitPhase(ns, "taskbelow", 90*time.Second, batch.Running)

	setRestarts(t, s, "taskbelow-t-0", 1)
	setRestarts(t, s, "taskbelow-t-1", 1)
	setRestarts(t, s, "taskfailed-t-0", 1)
	setRestarts(t, s, "taskfailed-t-1", 1) // 2 restarts between the task's pods: maxRetry
	s.WaitPhase(ns, "taskfailed", 90*time.Second, batch.Terminated)
	if !contains(s.Events(ns, "taskfailed", "ExecuteAction"), "Start to execute action TerminateJob") {
		t.Errorf("no ExecuteAction event for TerminateJob\n%s", s.Describe(ns, "taskfailed"))
	}
	if job := s.WaitPhase(ns, "taskbelow", time.Second, batch.Running, batch.Terminated); job.Status.State.Phase != batch.Running {
		t.Errorf("a task below its maxRetry was terminated\n%s", s.Describe(ns, "taskbelow"))
	}
}
