package plugins

import (
	"encoding/json"
	"flag"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// EnvTFConfig is the environment variable of the tensorflow plugin.
const EnvTFConfig = "TF_CONFIG"

// tensorflow sets TF_CONFIG in every container: the cluster (the DNS name and port of every pod
// of the ps, worker, chief and evaluator tasks) and the pod's own role and index. A Job of one task
// with one replica runs stand-alone and gets nothing.
//
// Flags: --ps, --worker, --chief, --evaluator (the task of each role, named as the role by
// default), --port (2222). The port is only written into TF_CONFIG, so, as in Volcano, any
// number is taken.
type tensorflow struct {
	ignoredArgs
	ps, worker, chief, evaluator string
	port                         int
}

func newTensorflow(args []string, _ Env) (Plugin, error) {
	p := &tensorflow{}
	p.ignored = parseArgs(args, func(fs *flag.FlagSet) {
		fs.StringVar(&p.ps, "ps", "ps", "name of the parameter server task")
		fs.StringVar(&p.worker, "worker", "worker", "name of the worker task")
		fs.StringVar(&p.chief, "chief", "chief", "name of the chief task")
		fs.StringVar(&p.evaluator, "evaluator", "evaluator", "name of the evaluator task")
		fs.IntVar(&p.port, "port", 2222, "port of every server")
	})
	return p, nil
}

func (p *tensorflow) Name() string { return "tensorflow" }

// tfConfig is the TF_CONFIG document; the field order is the key order of the JSON.
type tfConfig struct {
	Cluster tfCluster `json:"cluster"`
	Task    tfTask    `json:"task"`
}

type tfCluster struct {
	PS        []string `json:"ps,omitempty"`
	Worker    []string `json:"worker,omitempty"`
	Chief     []string `json:"chief,omitempty"`
	Evaluator []string `json:"evaluator,omitempty"`
}

type tfTask struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

func (p *tensorflow) OnPodCreate(pod *corev1.Pod, job *batch.Job) error {
	if len(job.Spec.Tasks) == 1 && job.Spec.Tasks[0].Replicas == 1 {
		return nil
	}
	value, err := p.config(pod, job)
	if err != nil {
		return err
	}
	addEnv(pod, false, corev1.EnvVar{Name: EnvTFConfig, Value: value})
	return nil
}

// config is TF_CONFIG for pod. A task named for no role is not in the cluster, and its pods get
// their task name as type.
func (p *tensorflow) config(pod *corev1.Pod, job *batch.Job) (string, error) {
	index, err := indexOf(pod)
	if err != nil {
		return "", err
	}
	c := tfConfig{Task: tfTask{Type: p.role(taskOf(pod)), Index: index}}
	for i := range job.Spec.Tasks {
		t := &job.Spec.Tasks[i]
		// Every replica is listed, even when the template fixes one hostname for all.
		// Sized by the replicas by nature: state.MaxReplicasInPods bounds them.
		hosts := make([]string, max(t.Replicas, 0))
		for r := range hosts {
			hosts[r] = hostOf(job, t, r).fqdn() + ":" + strconv.Itoa(p.port)
		}
		switch t.Name {
		case p.ps:
			c.Cluster.PS = hosts
		case p.worker:
			c.Cluster.Worker = hosts
		case p.chief:
			c.Cluster.Chief = hosts
		case p.evaluator:
			c.Cluster.Evaluator = hosts
		}
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encode %s: %w", EnvTFConfig, err)
	}
	return string(raw), nil
}

// role is TensorFlow's name for the role of task.
func (p *tensorflow) role(task string) string {
	switch task {
	case p.chief:
		return "chief"
	case p.worker:
		return "worker"
	case p.ps:
		return "ps"
	case p.evaluator:
		return "evaluator"
	}
	return task
}

func (p *tensorflow) OnJobAdd(*batch.Job) (Changes, error)    { return Changes{}, nil }
func (p *tensorflow) OnJobUpdate(*batch.Job) (Changes, error) { return Changes{}, nil }
func (p *tensorflow) OnJobDelete(*batch.Job) (Changes, error) { return Changes{}, nil }
