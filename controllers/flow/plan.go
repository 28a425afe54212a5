package flow

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	flowv1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"
)

// The labels (and annotations, the same) a flow's Job carries, as Volcano names them: the
// JobTemplate it was made from and the JobFlow that made it, each "<namespace>.<name>". The
// JobTemplate's status is found through the first.
const (
	CreatedByJobTemplate = "volcano.sh/createdByJobTemplate"
	CreatedByJobFlow     = "volcano.sh/createdByJobFlow"
)

// flowKind is the kind of the controller reference a flow's Jobs carry.
var flowKind = flowv1.SchemeGroupVersion.WithKind("JobFlow")

// JobName is the name of the Job a flow makes for one of its steps: "<flow>-<step>". One name
// per step is what keeps a Job from being made twice: a second create, from a retry or a stale
// owner of the flow's slot, finds it AlreadyExists.
func JobName(flowName, step string) string { return flowName + "-" + step }

// TemplateRef is the value of CreatedByJobTemplate for the template name in namespace.
func TemplateRef(namespace, template string) string { return namespace + "." + template }

// TemplateOf parses a CreatedByJobTemplate value back into the template's key
// ("<namespace>/<name>"). A namespace has no dots, so the first one splits the two. A ref
// with a "/" names no template: its key would read as another namespace's.
func TemplateOf(ref string) (key string, ok bool) {
	ns, name, found := strings.Cut(ref, ".")
	if !found || ns == "" || name == "" || strings.Contains(ref, "/") {
		return "", false
	}
	return toolscache.NewObjectName(ns, name).String(), true
}

// FlowOf returns the name and UID of the JobFlow that controls job, if one does.
func FlowOf(job metav1.Object) (name string, uid types.UID, ok bool) {
	ref := metav1.GetControllerOf(job)
	if ref == nil || ref.Kind != flowKind.Kind || ref.APIVersion != flowKind.GroupVersion().String() {
		return "", "", false
	}
	return ref.Name, ref.UID, true
}

// JobFor is the Job a flow's step starts: the spec of the step's JobTemplate (Volcano names the
// template after the step) as it is now, the flow as its controller, and the template and the
// flow named in CreatedByJobTemplate and CreatedByJobFlow. The step's patch is not applied, as
// Volcano does not apply it (Ignored tells the user).
func JobFor(jf *flowv1.JobFlow, step string, tmpl *flowv1.JobTemplate) *batch.Job {
	marks := func() map[string]string {
		return map[string]string{
			CreatedByJobTemplate: TemplateRef(jf.Namespace, step),
			CreatedByJobFlow:     jf.Namespace + "." + jf.Name,
		}
	}
	job := &batch.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:            JobName(jf.Name, step),
			Namespace:       jf.Namespace,
			Labels:          marks(),
			Annotations:     marks(),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(jf, flowKind)},
		},
	}
	tmpl.Spec.DeepCopyInto(&job.Spec)
	return job
}

// Ignored names what a flow sets that Volcano's JobFlow controller does not act on, and so
// neither does ringfire: a step's patch (the Job is the template's, unpatched) and a step's
// dependency probes (a step waits for its targets to complete, nothing else). "" when none.
func Ignored(flows []flowv1.Flow) string {
	var patched, probed []string
	for _, f := range flows {
		if f.Patch != nil {
			patched = append(patched, f.Name)
		}
		if f.DependsOn != nil && f.DependsOn.Probe != nil {
			probed = append(probed, f.Name)
		}
	}
	var parts []string
	if len(patched) > 0 {
		parts = append(parts, fmt.Sprintf("the patch of steps %v is not applied: their Jobs are their templates' as they are (give each variant a JobTemplate of its own)", patched))
	}
	if len(probed) > 0 {
		parts = append(parts, fmt.Sprintf("the probes of steps %v are not checked: a step starts once its targets have Completed", probed))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + "; Volcano's JobFlow controller does the same"
}

// Graph is a flow's steps and what each waits for, checked once: every target names a step,
// no step is named twice, and there is no cycle.
type Graph struct {
	order []string            // the steps, as the spec lists them
	needs map[string][]string // step → the steps it waits for
}

// NewGraph checks the flow's dependencies. Its error says what to fix.
func NewGraph(flows []flowv1.Flow) (*Graph, error) {
	g := &Graph{needs: make(map[string][]string, len(flows))}
	for _, f := range flows {
		if _, dup := g.needs[f.Name]; dup {
			return nil, fmt.Errorf("step %q is listed twice in spec.flows", f.Name)
		}
		g.order = append(g.order, f.Name)
		g.needs[f.Name] = nil
		if f.DependsOn != nil {
			g.needs[f.Name] = slices.Clone(f.DependsOn.Targets)
		}
	}
	for _, step := range g.order {
		for _, t := range g.needs[step] {
			if _, ok := g.needs[t]; !ok {
				return nil, fmt.Errorf("step %q depends on %q, which is not a step of spec.flows", step, t)
			}
		}
	}
	if cycle := g.cycle(); cycle != nil {
		return nil, fmt.Errorf("spec.flows is not a DAG: %s", strings.Join(cycle, " → "))
	}
	return g, nil
}

// cycle returns a dependency cycle (its first step repeated at the end), or nil.
func (g *Graph) cycle() []string {
	const (
		unseen = iota
		onPath
		done
	)
	state := make(map[string]int, len(g.order))
	var path []string
	var visit func(step string) []string
	visit = func(step string) []string {
		state[step] = onPath
		path = append(path, step)
		for _, t := range g.needs[step] {
			switch state[t] {
			case onPath:
				i := slices.Index(path, t)
				return append(slices.Clone(path[i:]), t)
			case unseen:
				if c := visit(t); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[step] = done
		return nil
	}
	for _, step := range g.order {
		if state[step] == unseen {
			if c := visit(step); c != nil {
				return c
			}
		}
	}
	return nil
}

// Ready returns the steps whose Job may be made now, in spec order: those without a Job whose
// every dependency's Job has Completed. phase gives the phase of a step's Job, ok false when
// the step has none.
func (g *Graph) Ready(phase func(step string) (batch.JobPhase, bool)) []string {
	var ready []string
	for _, step := range g.order {
		if _, made := phase(step); made {
			continue
		}
		if g.met(step, phase) {
			ready = append(ready, step)
		}
	}
	return ready
}

func (g *Graph) met(step string, phase func(string) (batch.JobPhase, bool)) bool {
	for _, t := range g.needs[step] {
		if p, ok := phase(t); !ok || p != batch.Completed {
			return false
		}
	}
	return true
}

// Steps are the flow's steps in spec order.
func (g *Graph) Steps() []string { return slices.Clone(g.order) }
