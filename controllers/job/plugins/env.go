package plugins

import (
	"errors"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// Environment variables of the env plugin: the pod's index in its task, under Volcano's old and
// new prefixes.
const (
	EnvTaskIndexVK = "VK_TASK_INDEX"
	EnvTaskIndex   = "VC_TASK_INDEX"
)

// env sets VK_TASK_INDEX and VC_TASK_INDEX in every container and init container. It takes no
// arguments; like Volcano, which does not parse them, it ignores any it is given.
type env struct{ ignoredArgs }

func newEnv(args []string, _ Env) (Plugin, error) {
	var p env
	if len(args) > 0 {
		p.ignored = errors.New("the plugin takes no arguments: they are ignored")
	}
	return p, nil
}

func (env) Name() string { return "env" }

func (env) OnPodCreate(pod *corev1.Pod, _ *batch.Job) error {
	index, err := indexOf(pod)
	if err != nil {
		return err
	}
	ix := strconv.Itoa(index)
	addEnv(pod, true, corev1.EnvVar{Name: EnvTaskIndexVK, Value: ix}, corev1.EnvVar{Name: EnvTaskIndex, Value: ix})
	return nil
}

func (env) OnJobAdd(*batch.Job) (Changes, error)    { return Changes{}, nil }
func (env) OnJobUpdate(*batch.Job) (Changes, error) { return Changes{}, nil }
func (env) OnJobDelete(*batch.Job) (Changes, error) { return Changes{}, nil }
