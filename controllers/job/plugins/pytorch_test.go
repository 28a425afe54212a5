package plugins

import (
	"context"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestPytorchWaitForMaster(t *testing.T) {
	wait := func(image, addr string, port, timeout int) corev1.Container {
		return corev1.Container{
			Name: "wait-for-master", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"sh", "-c", WaitForMasterScript(addr, port, timeout)},
		}
	}
	template := corev1.Container{Name: "init", Image: "img"}
	for _, tc := range []struct {
		name string
		args []string
		task string
		// preset is an init container the template has besides "init".
		preset *corev1.Container
		want   []corev1.Container // the pod's init containers
	}{
		{name: "off by default", task: "worker", want: []corev1.Container{template}},
		{
			name: "a worker waits, after its own init containers", args: []string{"--wait-master-enabled"}, task: "worker",
			want: []corev1.Container{template, wait("busybox:1.36.1", "train-master-0.train", 23456, 300)},
		},
		{name: "the master does not wait", args: []string{"--wait-master-enabled"}, task: "master", want: []corev1.Container{template}},
		{name: "nor a task of neither role", args: []string{"--wait-master-enabled"}, task: "extra", want: []corev1.Container{template}},
		{
			name: "image, timeout and port",
			args: []string{"--wait-master-enabled=true", "--wait-master-image=alpine:3", "--wait-master-timeout=60", "--port=1234"},
			task: "worker", want: []corev1.Container{template, wait("alpine:3", "train-master-0.train", 1234, 60)},
		},
		{
			name: "an init container of that name is kept as it is", args: []string{"--wait-master-enabled"}, task: "worker",
			preset: &corev1.Container{Name: "wait-for-master", Image: "mine"},
			want:   []corev1.Container{template, {Name: "wait-for-master", Image: "mine"}},
		},
		{name: "no master task: the pod is left alone", args: []string{"--wait-master-enabled", "--master=m"}, task: "worker",
			want: []corev1.Container{template}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testJob(task("master", 1), task("worker", 2), task("extra", 1))
			pod := podOf(t, job, tc.task, 0)
			if tc.preset != nil {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, *tc.preset)
			}
			if err := mustNew(t, "pytorch", tc.args...).OnPodCreate(pod, job); err != nil {
				t.Fatal(err)
			}
			equal(t, "init containers", pod.Spec.InitContainers, tc.want)
		})
	}
}

// The wait-for-master script, run by a shell: it returns at once when the master's port
// answers, and fails once the timeout has passed without an answer.
func TestWaitForMasterScript(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to run the script with")
	}
	run := func(port, timeout int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, bash, "-c", WaitForMasterScript("127.0.0.1", port, timeout)).CombinedOutput()
		t.Logf("port %d, timeout %d: %s", port, timeout, out)
		return err
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := run(port, 0); err != nil {
		t.Errorf("a master that listens: %v", err)
	}
	l.Close()
	if err := run(port, 0); err == nil {
		t.Errorf("a master that is gone: the script succeeds")
	}

	if got := WaitForMasterScript("it's", 1, 2); !slices.Contains(strings.Split(got, "\n"), `addr='it'\''s' port=1 timeout=2 waited=0`) {
		t.Errorf("the address is not quoted for the shell:\n%s", got)
	}
}
