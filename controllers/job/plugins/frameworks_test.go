package plugins

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

func TestPytorch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		task     string
		index    int
		ports    []corev1.ContainerPort // the template's
		wantEnv  []corev1.EnvVar
		wantPort []corev1.ContainerPort
	}{
		{
			name: "master", task: "master",
			wantEnv: []corev1.EnvVar{
				{Name: "MASTER_ADDR", Value: "train-master-0.train"}, {Name: "MASTER_PORT", Value: "23456"},
				{Name: "WORLD_SIZE", Value: "4"}, {Name: "RANK", Value: "0"},
			},
			wantPort: []corev1.ContainerPort{{Name: "pytorchjob-port", ContainerPort: 23456}},
		},
		{
			name: "worker 2 has rank 3", task: "worker", index: 2,
			wantEnv: []corev1.EnvVar{
				{Name: "MASTER_ADDR", Value: "train-master-0.train"}, {Name: "MASTER_PORT", Value: "23456"},
				{Name: "WORLD_SIZE", Value: "4"}, {Name: "RANK", Value: "3"},
			},
			wantPort: []corev1.ContainerPort{{Name: "pytorchjob-port", ContainerPort: 23456}},
		},
		{
			name: "a port the template opens is kept", task: "worker", index: 0, args: []string{"--port=29500"},
			ports: []corev1.ContainerPort{{Name: "dist", ContainerPort: 29500}},
			wantEnv: []corev1.EnvVar{
				{Name: "MASTER_ADDR", Value: "train-master-0.train"}, {Name: "MASTER_PORT", Value: "29500"},
				{Name: "WORLD_SIZE", Value: "4"}, {Name: "RANK", Value: "1"},
			},
			wantPort: []corev1.ContainerPort{{Name: "dist", ContainerPort: 29500}},
		},
		{
			name: "a task of neither role has no rank", task: "extra",
			wantEnv: []corev1.EnvVar{
				{Name: "MASTER_ADDR", Value: "train-master-0.train"}, {Name: "MASTER_PORT", Value: "23456"},
				{Name: "WORLD_SIZE", Value: "4"},
			},
			wantPort: []corev1.ContainerPort{{Name: "pytorchjob-port", ContainerPort: 23456}},
		},
		{
			name: "no master task: the pod is left alone", task: "worker", args: []string{"--master=chief"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testJob(task("master", 1), task("worker", 3), task("extra", 0))
			pod := podOf(t, job, tc.task, tc.index)
			pod.Spec.Containers[0].Ports = tc.ports
			if err := mustNew(t, "pytorch", tc.args...).OnPodCreate(pod, job); err != nil {
				t.Fatal(err)
			}
			equal(t, "env", pod.Spec.Containers[0].Env, tc.wantEnv)
			equal(t, "ports", pod.Spec.Containers[0].Ports, tc.wantPort)
			if len(pod.Spec.InitContainers[0].Env)+len(pod.Spec.InitContainers[0].Ports) != 0 {
				t.Errorf("init container changed: %+v", pod.Spec.InitContainers[0])
			}
		})
	}
}

func TestMPI(t *testing.T) {
	sshPort := []corev1.ContainerPort{{Name: "mpijob-port", ContainerPort: 22}}
	hosts := []corev1.EnvVar{{Name: "MPI_HOST", Value: "train-worker-0.train,train-worker-1.train,train-worker-2.train"}}
	for _, tc := range []struct {
		name      string
		args      []string
		workers   int32
		fixedHost string
		task      string
		wantEnv   []corev1.EnvVar
		wantPorts []corev1.ContainerPort
	}{
		{name: "master", workers: 3, task: "master", wantEnv: hosts, wantPorts: sshPort},
		{name: "worker", workers: 3, task: "worker", wantPorts: sshPort},
		{
			name: "workers with one fixed hostname", workers: 3, fixedHost: "node", task: "master",
			wantEnv: []corev1.EnvVar{{Name: "MPI_HOST", Value: "node.train"}}, wantPorts: sshPort,
		},
		{
			name: "no worker replicas", workers: 0, task: "master",
			wantEnv: []corev1.EnvVar{{Name: "MPI_HOST", Value: ""}}, wantPorts: sshPort,
		},
		{
			name: "other port", args: []string{"--port=2222"}, workers: 3, task: "worker",
			wantPorts: []corev1.ContainerPort{{Name: "mpijob-port", ContainerPort: 2222}},
		},
		{name: "no worker task: the master is left alone", args: []string{"--worker=w"}, workers: 3, task: "master"},
		{name: "no worker task: a worker still opens the port", args: []string{"--worker=w"}, workers: 3, task: "worker", wantPorts: sshPort},
	} {
		t.Run(tc.name, func(t *testing.T) {
			workers := task("worker", tc.workers)
			workers.Template.Spec.Hostname = tc.fixedHost
			job := testJob(task("master", 1), workers)
			pod := podOf(t, job, tc.task, 0)
			if err := mustNew(t, "mpi", tc.args...).OnPodCreate(pod, job); err != nil {
				t.Fatal(err)
			}
			for _, c := range append(pod.Spec.Containers, pod.Spec.InitContainers...) {
				equal(t, c.Name+" env", c.Env, tc.wantEnv)
				equal(t, c.Name+" ports", c.Ports, tc.wantPorts)
			}
		})
	}
}

func TestTensorflow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		tasks []string // name:replicas of the Job's tasks, in order
		task  string
		index int
		// fixedWorkerHost is the hostname the worker template fixes, if any.
		fixedWorkerHost string
		want            string // TF_CONFIG; "" for none
	}{
		{
			name: "worker 1", task: "worker", index: 1,
			want: `{"cluster":{"ps":["train-ps-0.train:2222"],"worker":["train-worker-0.train:2222","train-worker-1.train:2222"],` +
				`"chief":["train-chief-0.train:2222"]},"task":{"type":"worker","index":1}}`,
		},
		{
			name: "ps", task: "ps",
			want: `{"cluster":{"ps":["train-ps-0.train:2222"],"worker":["train-worker-0.train:2222","train-worker-1.train:2222"],` +
				`"chief":["train-chief-0.train:2222"]},"task":{"type":"ps","index":0}}`,
		},
		{
			name: "renamed roles and port", args: []string{"--worker=trainer", "--ps=server", "--port=5000"},
			tasks: []string{"server", "trainer"}, task: "trainer", index: 0,
			want: `{"cluster":{"ps":["train-server-0.train:5000"],"worker":["train-trainer-0.train:5000","train-trainer-1.train:5000"]},` +
				`"task":{"type":"worker","index":0}}`,
		},
		{
			name: "a task of no role is outside the cluster and typed by its name", tasks: []string{"worker", "logger"},
			task: "logger",
			want: `{"cluster":{"worker":["train-worker-0.train:2222","train-worker-1.train:2222"]},"task":{"type":"logger","index":0}}`,
		},
		{
			name: "a fixed hostname is listed for every replica", tasks: []string{"worker", "ps"}, fixedWorkerHost: "w",
			task: "ps",
			want: `{"cluster":{"ps":["train-ps-0.train:2222"],"worker":["w.train:2222","w.train:2222"]},"task":{"type":"ps","index":0}}`,
		},
		{name: "stand-alone: one task of one replica", tasks: []string{"single"}, task: "single"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replicas := map[string]int32{"ps": 1, "worker": 2, "chief": 1, "server": 1, "trainer": 2, "logger": 1, "single": 1}
			names := tc.tasks
			if names == nil {
				names = []string{"ps", "worker", "chief"}
			}
			var tasks []batch.TaskSpec
			for _, n := range names {
				tasks = append(tasks, task(n, replicas[n]))
				if n == "worker" {
					tasks[len(tasks)-1].Template.Spec.Hostname = tc.fixedWorkerHost
				}
			}
			job := testJob(tasks...)
			pod := podOf(t, job, tc.task, tc.index)
			if err := mustNew(t, "tensorflow", tc.args...).OnPodCreate(pod, job); err != nil {
				t.Fatal(err)
			}
			env := envOf(pod.Spec.Containers[0])
			if got, ok := env["TF_CONFIG"]; got != tc.want || ok != (tc.want != "") {
				t.Errorf("TF_CONFIG:\n got  %s (set %v)\n want %s", got, ok, tc.want)
			}
			if len(pod.Spec.InitContainers[0].Env) != 0 {
				t.Errorf("init container got env %+v", pod.Spec.InitContainers[0].Env)
			}
		})
	}
}
