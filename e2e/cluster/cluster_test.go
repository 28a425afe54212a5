package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/ringfire/ringfire/e2e/cluster"
)

// shared is the one control plane every test in this package uses.
var shared cluster.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	if err := shared.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop cluster:", err)
		code = 1
	}
	os.Exit(code)
}

func TestControlPlaneStarts(t *testing.T) {
	c := shared.Get(t)
	ctx := context.Background()

	t.Run("server reports its real version", func(t *testing.T) {
		v, err := c.Clientset().Discovery().ServerVersion()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(v.GitVersion, "v1.36.") || v.Major != "1" || v.Minor != "36" {
			t.Errorf("server version = %q (major %q, minor %q), want v1.36.x", v.GitVersion, v.Major, v.Minor)
		}
	})

	t.Run("nodes are Ready without the not-ready taint", func(t *testing.T) {
		nodes, err := c.Clientset().CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes.Items) != 3 {
			t.Fatalf("got %d nodes, want 3", len(nodes.Items))
		}
		for _, node := range nodes.Items {
			if !isReady(node) {
				t.Errorf("node %s is not Ready: %+v", node.Name, node.Status.Conditions)
			}
			for _, taint := range node.Spec.Taints {
				if taint.Key == corev1.TaintNodeNotReady {
					t.Errorf("node %s still has taint %s", node.Name, taint.Key)
				}
			}
			if cpu := node.Status.Allocatable.Cpu().String(); cpu != "32" {
				t.Errorf("node %s allocatable cpu = %s, want 32", node.Name, cpu)
			}
		}
	})

	t.Run("kubeconfig file reaches the cluster", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != c.ServerURL() {
			t.Errorf("kubeconfig server = %s, want %s", cfg.Host, c.ServerURL())
		}
		if !strings.HasPrefix(c.EtcdEndpoint(), "http://127.0.0.1:") {
			t.Errorf("etcd endpoint %s is not on loopback", c.EtcdEndpoint())
		}
	})
}

func TestPodOnFakeNodeEndsAsAnnotated(t *testing.T) {
	c := shared.Get(t)
	tests := []struct {
		name      string
		duration  string
		exitCode  string
		wantPhase corev1.PodPhase
		wantCode  int32
	}{
		{name: "exit 0 succeeds", duration: "2s", exitCode: "0", wantPhase: corev1.PodSucceeded, wantCode: 0},
		{name: "exit 3 fails", duration: "2s", exitCode: "3", wantPhase: corev1.PodFailed, wantCode: 3},
		{name: "no annotations: default duration, succeeds", wantPhase: corev1.PodSucceeded, wantCode: 0},
		{name: "exit 255 fails", duration: "1s", exitCode: "255", wantPhase: corev1.PodFailed, wantCode: 255},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			annotations := map[string]string{}
			if tt.duration != "" {
				annotations[cluster.PodDurationAnnotation] = tt.duration
			}
			if tt.exitCode != "" {
				annotations[cluster.PodExitCodeAnnotation] = tt.exitCode
			}
			pod := createPod(ctx, t, c, fmt.Sprintf("annotated-%d", i), cluster.NodeName(i%len(c.NodeNames())), annotations)

			sawRunning := false
			pod = waitForPod(ctx, t, c, pod, func(p *corev1.Pod) bool {
				sawRunning = sawRunning || p.Status.Phase == corev1.PodRunning
				return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
			})
			if !sawRunning {
				t.Errorf("pod never seen Running")
			}
			if pod.Status.Phase != tt.wantPhase {
				t.Fatalf("phase = %s, want %s", pod.Status.Phase, tt.wantPhase)
			}
			if len(pod.Status.ContainerStatuses) != 1 {
				t.Fatalf("got %d container statuses, want 1", len(pod.Status.ContainerStatuses))
			}
			term := pod.Status.ContainerStatuses[0].State.Terminated
			if term == nil {
				t.Fatalf("container not terminated: %+v", pod.Status.ContainerStatuses[0].State)
			}
			if term.ExitCode != tt.wantCode {
				t.Errorf("exit code = %d, want %d", term.ExitCode, tt.wantCode)
			}
			wantDuration := time.Second // Options.DefaultPodDuration's default
			if tt.duration != "" {
				wantDuration, _ = time.ParseDuration(tt.duration)
			}
			// Timestamps have one-second resolution.
			if ran := term.FinishedAt.Sub(term.StartedAt.Time); ran < wantDuration-time.Second {
				t.Errorf("container ran %v, want about %v", ran, wantDuration)
			}
		})
	}
}

// A pod without the tests' annotations plays its command: sleeps take their
// time, exit codes end it, a command the image lacks fails with 127, a daemon
// runs until deleted.
func TestPodOnFakeNodePlaysItsCommand(t *testing.T) {
	c := shared.Get(t)
	sh := func(script string) []string { return []string{"/bin/sh", "-c", script} }
	tests := []struct {
		name      string
		command   []string
		forever   bool
		wantPhase corev1.PodPhase
		wantCode  int32
		wantRun   time.Duration
	}{
		{name: "sleep", command: []string{"sleep", "2"}, wantPhase: corev1.PodSucceeded, wantRun: 2 * time.Second},
		{name: "sleep then exit 3", command: sh("sleep 2s && exit 3"), wantPhase: corev1.PodFailed, wantCode: 3, wantRun: 2 * time.Second},
		{name: "sleep then a missing command", command: sh("sleep 1s && xyz"), wantPhase: corev1.PodFailed, wantCode: 127, wantRun: time.Second},
		{name: "a script the image lacks", command: sh("sh fake.sh"), wantPhase: corev1.PodFailed, wantCode: 127},
		{name: "echo; exit 1", command: sh("echo Hello $(date); exit 1"), wantPhase: corev1.PodFailed, wantCode: 1},
		{name: "echo; sleep", command: sh("echo start; sleep 2"), wantPhase: corev1.PodSucceeded, wantRun: 2 * time.Second},
		{name: "skipped after a failure", command: sh("false && sleep 30; exit 0"), wantPhase: corev1.PodSucceeded},
		{name: "python", command: []string{"python", "train.py"}, wantPhase: corev1.PodSucceeded},
		{name: "a daemon runs until deleted", command: []string{"/usr/sbin/sshd", "-D"}, forever: true},
		{name: "sleep infinity", command: sh("sleep infinity"), forever: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			pod := createPodWith(ctx, t, c, fmt.Sprintf("plays-%d", i), cluster.NodeName(i%len(c.NodeNames())), nil, tt.command)
			if tt.forever {
				pod = waitForPod(ctx, t, c, pod, func(p *corev1.Pod) bool { return p.Status.Phase != corev1.PodPending })
				time.Sleep(4 * time.Second)
				got, err := c.Clientset().CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got.Status.Phase != corev1.PodRunning {
					t.Fatalf("phase %s 4 s after it started, want still Running", got.Status.Phase)
				}
				return
			}
			pod = waitForPod(ctx, t, c, pod, func(p *corev1.Pod) bool {
				return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
			})
			if pod.Status.Phase != tt.wantPhase {
				t.Fatalf("phase = %s, want %s", pod.Status.Phase, tt.wantPhase)
			}
			term := pod.Status.ContainerStatuses[0].State.Terminated
			if term == nil {
				t.Fatalf("container not terminated: %+v", pod.Status.ContainerStatuses[0].State)
			}
			if term.ExitCode != tt.wantCode {
				t.Errorf("exit code = %d, want %d", term.ExitCode, tt.wantCode)
			}
			// Timestamps have one-second resolution.
			if ran := term.FinishedAt.Sub(term.StartedAt.Time); ran < tt.wantRun-time.Second || ran > tt.wantRun+3*time.Second {
				t.Errorf("container ran %v, want about %v", ran, tt.wantRun)
			}
		})
	}
}

func TestDeletedPodDisappears(t *testing.T) {
	c := shared.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pod := createPod(ctx, t, c, "deleted", cluster.NodeName(0), map[string]string{cluster.PodDurationAnnotation: "1h"})
	waitForPod(ctx, t, c, pod, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })

	pods := c.Clientset().CoreV1().Pods(metav1.NamespaceDefault)
	if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPodGone(ctx, t, c, pod.Name)
}

// kwok deletes a pod by name, without its UID: a delete of it played again after a new pod of
// the same name was made would delete the new one. The control plane refuses kwok's delete of
// a pod that is not being deleted, so that only the pod kwok meant goes.
func TestKwokDeletesOnlyPodsBeingDeleted(t *testing.T) {
	c := shared.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pod := createPod(ctx, t, c, "kwok-delete", cluster.NodeName(0), map[string]string{cluster.PodDurationAnnotation: "1h"})
	waitForPod(ctx, t, c, pod, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(c.Dir(), "kwok.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	asKwok := kubernetes.NewForConfigOrDie(cfg).CoreV1().Pods(metav1.NamespaceDefault)
	err = asKwok.Delete(ctx, pod.Name, *metav1.NewDeleteOptions(0))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "kwok deletes only pods being deleted") {
		t.Fatalf("kwok's delete of a pod not being deleted: %v, want it refused by the policy", err)
	}
	// A pod being deleted is kwok's to delete, as before: TestDeletedPodDisappears.
	if err := c.Clientset().CoreV1().Pods(metav1.NamespaceDefault).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPodGone(ctx, t, c, pod.Name)
}

func waitForPodGone(ctx context.Context, t *testing.T, c *cluster.Cluster, name string) {
	t.Helper()
	pods := c.Clientset().CoreV1().Pods(metav1.NamespaceDefault)
	for {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("pod %s still there after delete: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestDeletedPodWaitsForItsFinalizer(t *testing.T) {
	c := shared.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const finalizer = "ringfire.io/e2e-test"
	pod := createPod(ctx, t, c, "finalized", cluster.NodeName(0), map[string]string{cluster.PodDurationAnnotation: "1h"}, finalizer)
	pod = waitForPod(ctx, t, c, pod, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })

	pods := c.Clientset().CoreV1().Pods(metav1.NamespaceDefault)
	if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// kwok deletes at once; the finalizer keeps the pod until it is removed.
	pod = waitForPod(ctx, t, c, pod, func(p *corev1.Pod) bool {
		return p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0
	})
	time.Sleep(500 * time.Millisecond)
	if _, err := pods.Get(ctx, pod.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("pod with a finalizer went away: %v", err)
	}
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := pods.Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPodGone(ctx, t, c, pod.Name)
}

func createPod(ctx context.Context, t *testing.T, c *cluster.Cluster, name, node string, annotations map[string]string, finalizers ...string) *corev1.Pod {
	t.Helper()
	return createPodWith(ctx, t, c, name, node, annotations, nil, finalizers...)
}

// createPodWith creates a pod whose container runs command.
func createPodWith(ctx context.Context, t *testing.T, c *cluster.Cluster, name, node string, annotations map[string]string, command []string, finalizers ...string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations, Finalizers: finalizers},
		Spec: corev1.PodSpec{
			NodeName:      node,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "registry.invalid/task:1", Command: command}},
		},
	}
	pods := c.Clientset().CoreV1().Pods(metav1.NamespaceDefault)
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		err := pods.Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete pod %s: %v", name, err)
		}
	})
	return created
}

// waitForPod watches the pod from the version given until done returns true.
// A watch delivers every change, so a short-lived phase is never missed.
func waitForPod(ctx context.Context, t *testing.T, c *cluster.Cluster, from *corev1.Pod, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	w, err := c.Clientset().CoreV1().Pods(from.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", from.Name).String(),
		ResourceVersion: from.ResourceVersion,
	})
	if err != nil {
		t.Fatalf("watch pod %s: %v", from.Name, err)
	}
	last := from
	_, err = watchtools.UntilWithoutRetry(ctx, w, func(ev watch.Event) (bool, error) {
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return false, fmt.Errorf("watch event %s: %v", ev.Type, ev.Object)
		}
		last = pod
		return done(pod), nil
	})
	if err != nil {
		t.Fatalf("pod %s: gave up waiting in phase %q: %v", from.Name, last.Status.Phase, err)
	}
	return last
}

func isReady(node corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func TestAPIServerRestart(t *testing.T) {
	c := shared.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Restart(cluster.APIServer, true); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Clientset().CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{}); err != nil {
		t.Errorf("after restart: %v", err)
	}
}

func TestStartReusesItsDirectory(t *testing.T) {
	cluster.RequireTools(t)
	dir := t.TempDir()
	for round := range 2 {
		c := cluster.StartForTest(t, cluster.Options{Dir: dir, Nodes: 1})
		if _, err := c.Clientset().CoreV1().Nodes().Get(context.Background(), cluster.NodeName(0), metav1.GetOptions{}); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := c.Stop(); err != nil {
			t.Fatalf("round %d: stop: %v", round, err)
		}
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("round %d: Stop removed a directory it was given: %v", round, err)
		}
	}
}
