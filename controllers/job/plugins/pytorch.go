package plugins

import (
	"errors"
	"flag"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// Environment variables of the pytorch plugin, read by torch.distributed.
const (
	EnvMasterAddr = "MASTER_ADDR"
	EnvMasterPort = "MASTER_PORT"
	EnvWorldSize  = "WORLD_SIZE"
	EnvRank       = "RANK"
)

// pytorch wires torch.distributed: every container gets MASTER_ADDR (the DNS name of the master
// task's first pod), MASTER_PORT and WORLD_SIZE (the replicas of all tasks); the master's pods get
// RANK 0 and worker i gets RANK i+1; every container opens the port.
//
// Flags: --master (task, default "master"), --worker (task, default "worker"), --port (23456).
type pytorch struct {
	master, worker string
	port           int
}

func newPytorch(args []string, _ Env) (Plugin, error) {
	p := &pytorch{}
	err := parseArgs(args, func(fs *flag.FlagSet) {
		fs.StringVar(&p.master, "master", "master", "name of the master task")
		fs.StringVar(&p.worker, "worker", "worker", "name of the worker task")
		fs.IntVar(&p.port, "port", 23456, "port of the master")
	})
	if err == nil {
		err = errors.Join(checkTaskName("master", p.master), checkTaskName("worker", p.worker), checkPort(p.port))
	}
	return p, err
}

func (p *pytorch) Name() string { return "pytorch" }

// OnPodCreate leaves the pod alone when the Job has no master task, as Volcano does.
func (p *pytorch) OnPodCreate(pod *corev1.Pod, job *batch.Job) error {
	master := findTask(job, p.master)
	if master == nil {
		return nil
	}
	var worldSize int32
	for _, t := range job.Spec.Tasks {
		worldSize += t.Replicas
	}
	vars := []corev1.EnvVar{
		{Name: EnvMasterAddr, Value: hostOf(job, master, 0).fqdn()},
		{Name: EnvMasterPort, Value: strconv.Itoa(p.port)},
		{Name: EnvWorldSize, Value: strconv.Itoa(int(worldSize))},
	}
	switch taskOf(pod) {
	case p.worker:
		index, err := indexOf(pod)
		if err != nil {
			return err
		}
		vars = append(vars, corev1.EnvVar{Name: EnvRank, Value: strconv.Itoa(index + 1)})
	case p.master:
		vars = append(vars, corev1.EnvVar{Name: EnvRank, Value: "0"})
	}
	openPort(pod.Spec.Containers, "pytorchjob-port", p.port)
	addEnv(pod, false, vars...)
	return nil
}

func (p *pytorch) OnJobAdd(*batch.Job) (Changes, error)    { return Changes{}, nil }
func (p *pytorch) OnJobUpdate(*batch.Job) (Changes, error) { return Changes{}, nil }
func (p *pytorch) OnJobDelete(*batch.Job) (Changes, error) { return Changes{}, nil }
