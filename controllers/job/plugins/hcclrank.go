package plugins

import (
	"flag"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// HCCLRankAnnotation is the annotation of the hcclrank plugin: the pod's rank in an Ascend HCCL
// job, which Ascend's device plugin reads.
const HCCLRankAnnotation = "hccl/rankIndex"

// hcclrank ranks the pods of an HCCL job in an annotation: master pod i has rank i, worker pod i
// has rank (master replicas) + i; pods of other tasks get none. A pod that already carries the
// annotation (from its template) keeps it, and a pod whose containers set RANK gets its value
// (the first RANK of the containers, when it has a value). It makes no objects.
//
// It runs before pytorch (plugins run in name order), so the RANK it takes is one the template
// sets, not the one pytorch adds. In Volcano, whose plugins run in random order, it may be
// either; they differ only when the master task has more than one replica.
//
// Flags: --master (task, default "master"), --worker (task, default "worker").
type hcclrank struct {
	ignoredArgs
	master, worker string
}

func newHCCLRank(args []string, _ Env) (Plugin, error) {
	p := &hcclrank{}
	p.ignored = parseArgs(args, func(fs *flag.FlagSet) {
		fs.StringVar(&p.master, "master", "master", "name of the master task")
		fs.StringVar(&p.worker, "worker", "worker", "name of the worker task")
	})
	return p, nil
}

func (p *hcclrank) Name() string { return "hcclrank" }

func (p *hcclrank) OnPodCreate(pod *corev1.Pod, job *batch.Job) error {
	if pod.Annotations[HCCLRankAnnotation] != "" {
		return nil
	}
	rank, ok := rankFromEnv(pod)
	if !ok {
		var err error
		if rank, ok, err = p.rankOf(pod, job); err != nil || !ok {
			return err
		}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[HCCLRankAnnotation] = rank
	return nil
}

// rankFromEnv is the value of the first RANK variable of pod's containers, if it has one.
func rankFromEnv(pod *corev1.Pod) (string, bool) {
	for _, c := range pod.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == EnvRank {
				return e.Value, e.Value != ""
			}
		}
	}
	return "", false
}

// rankOf is the rank of a master or worker pod; false for a pod of another task.
func (p *hcclrank) rankOf(pod *corev1.Pod, job *batch.Job) (string, bool, error) {
	task := taskOf(pod)
	if task != p.master && task != p.worker {
		return "", false, nil
	}
	index, err := indexOf(pod)
	if err != nil {
		return "", false, err
	}
	if task != p.master {
		if master := findTask(job, p.master); master != nil {
			index += int(master.Replicas)
		}
	}
	return strconv.Itoa(index), true, nil
}

func (p *hcclrank) OnJobAdd(*batch.Job) (Changes, error)    { return Changes{}, nil }
func (p *hcclrank) OnJobUpdate(*batch.Job) (Changes, error) { return Changes{}, nil }
func (p *hcclrank) OnJobDelete(*batch.Job) (Changes, error) { return Changes{}, nil }
