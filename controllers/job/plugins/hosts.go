package plugins

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/build"
)

// host is the DNS identity of a pod in its Job's headless Service.
type host struct {
	name      string // the pod's hostname: the template's, else the pod name
	subdomain string // the template's subdomain, else the Job's name (the Service)
}

// fqdn is the name other pods of the Job reach it by: <hostname>.<subdomain>.
func (h host) fqdn() string { return h.name + "." + h.subdomain }

// hostOf is the host of the pod at index of task.
func hostOf(job *batch.Job, task *batch.TaskSpec, index int) host {
	h := host{name: task.Template.Spec.Hostname, subdomain: task.Template.Spec.Subdomain}
	if h.name == "" {
		h.name = build.PodName(job.Name, task.Name, index)
	}
	if h.subdomain == "" {
		h.subdomain = job.Name
	}
	return h
}

// taskHosts lists the host of each replica of task. A template that fixes the hostname gives all
// replicas one name, which is listed once, as Volcano's svc, ssh and mpi plugins do.
func taskHosts(job *batch.Job, task *batch.TaskSpec) []host {
	var hosts []host
	for i := 0; i < int(task.Replicas); i++ {
		hosts = append(hosts, hostOf(job, task, i))
		if task.Template.Spec.Hostname != "" {
			break
		}
	}
	return hosts
}

// fqdns is the fqdn of each of hosts.
func fqdns(hosts []host) []string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = h.fqdn()
	}
	return out
}

// findTask is the task of job named name, or nil.
func findTask(job *batch.Job, name string) *batch.TaskSpec {
	for i := range job.Spec.Tasks {
		if job.Spec.Tasks[i].Name == name {
			return &job.Spec.Tasks[i]
		}
	}
	return nil
}

// taskOf is the task a pod belongs to, from its task-spec annotation ("default" when unset).
func taskOf(pod *corev1.Pod) string {
	if name := pod.Annotations[batch.TaskSpecKey]; name != "" {
		return name
	}
	return batch.DefaultTaskSpec
}

// indexOf is the pod's index in its task: its task-index label, else the last dash-separated part
// of its name, which is how Volcano's plugins read it.
func indexOf(pod *corev1.Pod) (int, error) {
	s, ok := pod.Labels[batch.TaskIndex]
	if !ok {
		s = pod.Name[strings.LastIndex(pod.Name, "-")+1:]
	}
	index, err := strconv.Atoi(s)
	if err != nil || index < 0 {
		return 0, fmt.Errorf("pod %s has no task index (label %s)", pod.Name, batch.TaskIndex)
	}
	return index, nil
}

// envKey is a task name as Volcano puts it in environment variable names: dashes become
// underscores.
func envKey(task string) string { return strings.ReplaceAll(task, "-", "_") }

// addEnv appends vars to every container of pod, and to its init containers when init is set.
func addEnv(pod *corev1.Pod, init bool, vars ...corev1.EnvVar) {
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Env = append(pod.Spec.Containers[i].Env, vars...)
	}
	if init {
		for i := range pod.Spec.InitContainers {
			pod.Spec.InitContainers[i].Env = append(pod.Spec.InitContainers[i].Env, vars...)
		}
	}
}

// addMount adds volume to pod and mounts it in every container and init container.
func addMount(pod *corev1.Pod, volume corev1.Volume, mount corev1.VolumeMount) {
	pod.Spec.Volumes = append(pod.Spec.Volumes, volume)
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].VolumeMounts = append(pod.Spec.Containers[i].VolumeMounts, mount)
	}
	for i := range pod.Spec.InitContainers {
		pod.Spec.InitContainers[i].VolumeMounts = append(pod.Spec.InitContainers[i].VolumeMounts, mount)
	}
}

// openPort adds port, named name, to every container of cs that does not already list the number.
func openPort(cs []corev1.Container, name string, port int) {
	for i := range cs {
		if !hasPort(cs[i].Ports, port) {
			cs[i].Ports = append(cs[i].Ports, corev1.ContainerPort{Name: name, ContainerPort: int32(port)})
		}
	}
}

func hasPort(ports []corev1.ContainerPort, port int) bool {
	for _, p := range ports {
		if int(p.ContainerPort) == port {
			return true
		}
	}
	return false
}
