package plugins

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// builders makes each plugin ringfire knows from its arguments.
var builders = map[string]func(args []string, env Env) (Plugin, error){
	"env":        newEnv,
	"hcclrank":   newHCCLRank,
	"mpi":        newMPI,
	"pytorch":    newPytorch,
	"ray":        newRay,
	"ssh":        newSSH,
	"svc":        newSvc,
	"tensorflow": newTensorflow,
}

// Names lists the plugins ringfire knows, sorted.
func Names() []string { return slices.Sorted(maps.Keys(builders)) }

// New is the plugin named name with its arguments parsed. An unknown name, or an argument no pod
// could be made with, is an error that says what is wrong; arguments Volcano would skip are
// skipped and told by the plugin's Ignored.
func New(name string, args []string, env Env) (Plugin, error) {
	b, ok := builders[name]
	if !ok {
		return nil, fmt.Errorf("unknown plugin %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	p, err := b(args, env)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", name, err)
	}
	return p, nil
}

// Set is the plugins a Job names, in name order.
type Set []Plugin

// ForJob builds the plugins of job.spec.plugins. It fails on the first plugin, by name, that is
// unknown or has an argument no pod could be made with (a port number out of range); arguments
// Volcano would skip are skipped (Set.Ignored says which).
func ForJob(job *batch.Job, env Env) (Set, error) {
	var s Set
	for _, name := range slices.Sorted(maps.Keys(job.Spec.Plugins)) {
		p, err := New(name, job.Spec.Plugins[name], env)
		if err != nil {
			return nil, err
		}
		s = append(s, p)
	}
	return s, nil
}

// ControlledKey is the key of status.controlledResources with which Volcano marks a Job on which
// plugin name's OnJobAdd has run: "plugin-<name>", whose value is the name.
func ControlledKey(name string) string { return "plugin-" + name }

// Marked tells whether job carries the mark of plugin name: its OnJobAdd has run in this life
// of the Job (since the last full kill).
func Marked(job *batch.Job, name string) bool {
	return job.Status.ControlledResources[ControlledKey(name)] == name
}

// Ignored lists what the plugins' parses left out of their arguments, each error naming its
// plugin; only for the plugins that have not marked job yet, so that a caller reporting them on
// the sync that runs OnJobAdd reports them once per life of the Job.
func (s Set) Ignored(job *batch.Job) []error {
	var out []error
	for _, p := range s {
		if err := p.Ignored(); err != nil && !Marked(job, p.Name()) {
			out = append(out, fmt.Errorf("plugin %s: %w", p.Name(), err))
		}
	}
	return out
}

// OnPodCreate lets every plugin change pod, a new pod of job.
func (s Set) OnPodCreate(pod *corev1.Pod, job *batch.Job) error {
	for _, p := range s {
		if err := p.OnPodCreate(pod, job); err != nil {
			return fmt.Errorf("plugin %s on pod %s: %w", p.Name(), pod.Name, err)
		}
	}
	return nil
}

// OnJobAdd collects the writes of every plugin that has not marked job yet, and marks job for
// them in job.status.controlledResources, which the controller writes with the status once the
// Changes are applied. On error nothing is marked.
func (s Set) OnJobAdd(job *batch.Job) (Changes, error) {
	var all Changes
	var done []string
	for _, p := range s {
		if Marked(job, p.Name()) {
			continue
		}
		c, err := p.OnJobAdd(job)
		if err != nil {
			return Changes{}, fmt.Errorf("plugin %s: %w", p.Name(), err)
		}
		all.add(c)
		done = append(done, p.Name())
	}
	for _, name := range done {
		if job.Status.ControlledResources == nil {
			job.Status.ControlledResources = map[string]string{}
		}
		job.Status.ControlledResources[ControlledKey(name)] = name
	}
	return all, nil
}

// OnJobUpdate collects the writes of every plugin.
func (s Set) OnJobUpdate(job *batch.Job) (Changes, error) {
	var all Changes
	for _, p := range s {
		c, err := p.OnJobUpdate(job)
		if err != nil {
			return Changes{}, fmt.Errorf("plugin %s: %w", p.Name(), err)
		}
		all.add(c)
	}
	return all, nil
}

// OnJobDelete collects the deletions of every plugin that has marked job, and removes their marks
// from job.status.controlledResources. On error no mark is removed.
func (s Set) OnJobDelete(job *batch.Job) (Changes, error) {
	var all Changes
	var done []string
	for _, p := range s {
		if !Marked(job, p.Name()) {
			continue
		}
		c, err := p.OnJobDelete(job)
		if err != nil {
			return Changes{}, fmt.Errorf("plugin %s: %w", p.Name(), err)
		}
		all.add(c)
		done = append(done, p.Name())
	}
	for _, name := range done {
		delete(job.Status.ControlledResources, ControlledKey(name))
	}
	return all, nil
}
