package plugins

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// rayJob is a Job of a head task (containers "head" and "side") and a worker task of two
// (containers "worker" and "side").
func rayJob() *batch.Job {
	job := testJob(task("head", 1), task("worker", 2))
	job.Spec.Tasks[0].Template.Spec.Containers = []corev1.Container{
		{Name: "head", Image: "ray", Command: []string{"sleep"}, Ports: []corev1.ContainerPort{{Name: "mine", ContainerPort: 8265}}},
		{Name: "side", Image: "img", Command: []string{"sleep"}},
	}
	job.Spec.Tasks[1].Template.Spec.Containers = []corev1.Container{
		{Name: "worker", Image: "ray", Command: []string{"sleep"}, Args: []string{"x"}},
		{Name: "side", Image: "img"},
	}
	return job
}

func TestRayPod(t *testing.T) {
	headCmd := func(gcs, dash, client string) []string {
		return []string{"sh", "-c", "ray start --head --block --dashboard-host=0.0.0.0 --port=" + gcs +
			" --dashboard-port=" + dash + " --ray-client-server-port=" + client}
	}
	for _, tc := range []struct {
		name      string
		args      []string
		headHost  string // the head template's hostname and subdomain, "host.sub"
		task      string
		wantCmd   []string // of the first container
		wantPorts []corev1.ContainerPort
		wantArgs  []string
	}{
		{
			name: "head: the command, and the ports it lacks by number", task: "head",
			wantCmd: headCmd("6379", "8265", "10001"),
			wantPorts: []corev1.ContainerPort{
				{Name: "mine", ContainerPort: 8265}, {Name: "gcs", ContainerPort: 6379}, {Name: "client-server", ContainerPort: 10001},
			},
		},
		{
			name: "worker: the command pointing at the head's first pod, its args kept", task: "worker",
			wantCmd: []string{"sh", "-c", "ray start --block --address=train-head-0.train:6379"}, wantArgs: []string{"x"},
		},
		{
			name: "other ports", args: []string{"--port=7000", "--dashboardPort=7001", "--clientPort=7002"}, task: "head",
			wantCmd: headCmd("7000", "7001", "7002"),
			wantPorts: []corev1.ContainerPort{
				{Name: "mine", ContainerPort: 8265}, {Name: "gcs", ContainerPort: 7000},
				{Name: "dashboard", ContainerPort: 7001}, {Name: "client-server", ContainerPort: 7002},
			},
		},
		{
			name: "the head's fixed hostname and subdomain", headHost: "hh.sd", args: []string{"--port=7000"}, task: "worker",
			wantCmd: []string{"sh", "-c", "ray start --block --address=hh.sd:7000"}, wantArgs: []string{"x"},
		},
		{
			name: "another container name: left alone", args: []string{"--workerContainer=ray"}, task: "worker",
			wantCmd: []string{"sleep"}, wantArgs: []string{"x"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := rayJob()
			if h, s, ok := strings.Cut(tc.headHost, "."); ok {
				job.Spec.Tasks[0].Template.Spec.Hostname, job.Spec.Tasks[0].Template.Spec.Subdomain = h, s
			}
			pod := podOf(t, job, tc.task, 0)
			side := pod.Spec.Containers[1].DeepCopy()
			if err := mustNew(t, "ray", tc.args...).OnPodCreate(pod, job); err != nil {
				t.Fatal(err)
			}
			c := pod.Spec.Containers[0]
			equal(t, "command", c.Command, tc.wantCmd)
			equal(t, "args", c.Args, tc.wantArgs)
			if tc.wantPorts != nil {
				equal(t, "ports", c.Ports, tc.wantPorts)
			}
			equal(t, "the other container", pod.Spec.Containers[1], *side)
		})
	}

	job := rayJob()
	pod := podOf(t, job, "worker", 0)
	err := mustNew(t, "ray", "--head=boss").OnPodCreate(pod, job)
	if err == nil || err.Error() != `job train has no head task "boss"` {
		t.Errorf("no head task: error %v", err)
	}
}

func TestRayService(t *testing.T) {
	job := rayJob()
	p := mustNew(t, "ray", "--head=head", "--port=7000")
	c, err := p.OnJobAdd(job)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Create) != 1 || len(c.Apply)+len(c.Delete) != 0 {
		t.Fatalf("changes %+v, want one Service to create", c)
	}
	svc := c.Create[0].(*corev1.Service)
	owned(t, svc, job)
	if svc.Name != "train-head-svc" || svc.Kind != "Service" {
		t.Errorf("Service %s (%s)", svc.Name, svc.Kind)
	}
	port := func(name string, n int32) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Port: n, TargetPort: intstr.FromString(name), Protocol: corev1.ProtocolTCP}
	}
	equal(t, "spec", svc.Spec, corev1.ServiceSpec{
		Selector: map[string]string{"volcano.sh/job-name": "train", "volcano.sh/job-namespace": "ns", "volcano.sh/task-spec": "head"},
		Ports:    []corev1.ServicePort{port("gcs", 7000), port("dashboard", 8265), port("client-server", 10001)},
	})
	if c, _ := p.OnJobUpdate(job); len(c.Create)+len(c.Apply)+len(c.Delete) != 0 {
		t.Errorf("OnJobUpdate asks for %+v", c)
	}
	c, _ = p.OnJobDelete(job)
	equal(t, "deleted", names(c.Delete), []string{"Service ns/train-head-svc"})
}
