package plugins

import (
	"errors"
	"flag"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/build"
)

// The names of the ray head's ports, on its container and on the head Service.
const (
	RayGCSPort       = "gcs"
	RayDashboardPort = "dashboard"
	RayClientPort    = "client-server"
)

// ray runs a Ray cluster: the head task's head container runs `ray start --head` and opens the
// GCS, dashboard and client-server ports; every worker task's worker container runs `ray start`
// against the head's first pod; a Service <job>-head-svc (a cluster IP) routes the three ports
// to the head task's pods. The commands replace the containers' own; their args are kept. The
// workers reach the head by its DNS name, which the svc plugin gives (list it too, as Volcano's
// guide says). A Job without the head task gets no pods: an error on every pod, as in Volcano.
//
// Flags: --head (task, default "head"), --headContainer ("head"), --worker (task, "worker"),
// --workerContainer ("worker"), --port (the GCS port, 6379), --dashboardPort (8265),
// --clientPort (10001). Volcano's guide spells the last --clientServerPort, which neither
// Volcano nor ringfire knows: it and the arguments after it are ignored.
type ray struct {
	ignoredArgs
	env                                Env
	head, headContainer                string
	worker, workerContainer            string
	gcsPort, dashboardPort, clientPort int
}

func newRay(args []string, env Env) (Plugin, error) {
	p := &ray{env: env}
	p.ignored = parseArgs(args, func(fs *flag.FlagSet) {
		fs.StringVar(&p.head, "head", "head", "name of the head task")
		fs.StringVar(&p.headContainer, "headContainer", "head", "name of the head task's ray container")
		fs.StringVar(&p.worker, "worker", "worker", "name of the worker task")
		fs.StringVar(&p.workerContainer, "workerContainer", "worker", "name of the worker task's ray container")
		fs.IntVar(&p.gcsPort, "port", 6379, "port of the GCS")
		fs.IntVar(&p.dashboardPort, "dashboardPort", 8265, "port of the Ray dashboard")
		fs.IntVar(&p.clientPort, "clientPort", 10001, "port of the Ray client server")
	})
	return p, errors.Join(checkPort("port", p.gcsPort), checkPort("dashboardPort", p.dashboardPort),
		checkPort("clientPort", p.clientPort))
}

func (p *ray) Name() string { return "ray" }

func (p *ray) OnPodCreate(pod *corev1.Pod, job *batch.Job) error {
	head := findTask(job, p.head)
	if head == nil {
		return fmt.Errorf("job %s has no head task %q", job.Name, p.head)
	}
	task := taskOf(pod)
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if task == p.head && c.Name == p.headContainer {
			one := pod.Spec.Containers[i : i+1]
			openPort(one, RayGCSPort, p.gcsPort)
			openPort(one, RayDashboardPort, p.dashboardPort)
			openPort(one, RayClientPort, p.clientPort)
			c.Command = []string{"sh", "-c", fmt.Sprintf(
				"ray start --head --block --dashboard-host=0.0.0.0 --port=%d --dashboard-port=%d --ray-client-server-port=%d",
				p.gcsPort, p.dashboardPort, p.clientPort)}
		}
		if task == p.worker && c.Name == p.workerContainer {
			c.Command = []string{"sh", "-c", fmt.Sprintf("ray start --block --address=%s:%d",
				hostOf(job, head, 0).fqdn(), p.gcsPort)}
		}
	}
	return nil
}

// headServiceName is the name of the Service of the ray head: <job>-head-svc.
func headServiceName(job *batch.Job) string { return job.Name + "-head-svc" }

// OnJobAdd asks for the head Service, created when absent.
func (p *ray) OnJobAdd(job *batch.Job) (Changes, error) {
	port := func(name string, number int) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Port: int32(number), TargetPort: intstr.FromString(name), Protocol: corev1.ProtocolTCP}
	}
	selector := jobPods(job)
	selector[batch.TaskSpecKey] = p.head
	return Changes{Create: []Object{&corev1.Service{
		TypeMeta:   typeMeta("v1", "Service"),
		ObjectMeta: build.OwnedMeta(job, headServiceName(job), p.env.Slot),
		Spec: corev1.ServiceSpec{
			Selector: selector,
			Ports: []corev1.ServicePort{
				port(RayGCSPort, p.gcsPort), port(RayDashboardPort, p.dashboardPort), port(RayClientPort, p.clientPort),
			},
		},
	}}}, nil
}

func (p *ray) OnJobUpdate(*batch.Job) (Changes, error) { return Changes{}, nil }

func (p *ray) OnJobDelete(job *batch.Job) (Changes, error) {
	return Changes{Delete: []Object{
		&corev1.Service{TypeMeta: typeMeta("v1", "Service"), ObjectMeta: named(job, headServiceName(job))},
	}}, nil
}
