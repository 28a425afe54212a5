package plugins

import (
	"flag"
	"strings"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// EnvMPIHost is the environment variable of the mpi plugin listing the worker hosts.
const EnvMPIHost = "MPI_HOST"

// mpi prepares an MPI launch over ssh: the master task's containers and init containers get
// MPI_HOST, the comma-separated DNS names of the worker pods; every container and init container
// of both opens the ssh port. It relies on the svc plugin for the names and on the ssh plugin for
// the keys, which state.Defaults adds.
//
// Flags: --master (task, default "master"), --worker (task, default "worker"), --port (22).
type mpi struct {
	ignoredArgs
	master, worker string
	port           int
}

func newMPI(args []string, _ Env) (Plugin, error) {
	p := &mpi{}
	p.ignored = parseArgs(args, func(fs *flag.FlagSet) {
		fs.StringVar(&p.master, "master", "master", "name of the master task")
		fs.StringVar(&p.worker, "worker", "worker", "name of the worker task")
		fs.IntVar(&p.port, "port", 22, "ssh port to open")
	})
	return p, checkPort("port", p.port)
}

func (p *mpi) Name() string { return "mpi" }

// OnPodCreate leaves a master pod alone when the Job has no worker task, as Volcano does.
func (p *mpi) OnPodCreate(pod *corev1.Pod, job *batch.Job) error {
	var hosts string
	master := taskOf(pod) == p.master
	if master {
		worker := findTask(job, p.worker)
		if worker == nil {
			return nil
		}
		hosts = strings.Join(fqdns(taskHosts(job, worker)), ",")
	}
	openPort(pod.Spec.InitContainers, "mpijob-port", p.port)
	openPort(pod.Spec.Containers, "mpijob-port", p.port)
	if master {
		addEnv(pod, true, corev1.EnvVar{Name: EnvMPIHost, Value: hosts})
	}
	return nil
}

func (p *mpi) OnJobAdd(*batch.Job) (Changes, error)    { return Changes{}, nil }
func (p *mpi) OnJobUpdate(*batch.Job) (Changes, error) { return Changes{}, nil }
func (p *mpi) OnJobDelete(*batch.Job) (Changes, error) { return Changes{}, nil }
