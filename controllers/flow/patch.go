package flow

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// patchTask lays a patch's task over the template's task of the same name: counts, policies
// and the pod template's fields the patch sets replace the template's; containers are merged
// by name.
func patchTask(task, p *batch.TaskSpec) {
	if p.Replicas != 0 {
		task.Replicas = p.Replicas
	}
	if p.MinAvailable != nil {
		task.MinAvailable = p.MinAvailable
	}
	if p.MaxRetry != 0 {
		task.MaxRetry = p.MaxRetry
	}
	if p.Policies != nil {
		task.Policies = slices.Clone(p.Policies)
	}
	if p.DependsOn != nil {
		task.DependsOn = p.DependsOn.DeepCopy()
	}
	maps.Copy(ensure(&task.Template.Labels), p.Template.Labels)
	maps.Copy(ensure(&task.Template.Annotations), p.Template.Annotations)
	patchPodSpec(&task.Template.Spec, &p.Template.Spec)
}

// patchPodSpec lays a patch's pod spec over the template's: containers, init containers and
// volumes merged by name, node selector entries by key, tolerations by key, and the affinity,
// security context and restart policy replaced when the patch sets them.
func patchPodSpec(spec, p *corev1.PodSpec) {
	spec.Containers = mergeContainers(spec.Containers, p.Containers)
	spec.InitContainers = mergeContainers(spec.InitContainers, p.InitContainers)
	for _, v := range p.Volumes {
		spec.Volumes = upsert(spec.Volumes, *v.DeepCopy(), func(w corev1.Volume) bool { return w.Name == v.Name })
	}
	if len(p.NodeSelector) > 0 {
		maps.Copy(ensure(&spec.NodeSelector), p.NodeSelector)
	}
	for _, t := range p.Tolerations {
		spec.Tolerations = upsert(spec.Tolerations, t, func(u corev1.Toleration) bool { return u.Key == t.Key })
	}
	if p.Affinity != nil {
		spec.Affinity = p.Affinity.DeepCopy()
	}
	if p.SecurityContext != nil {
		spec.SecurityContext = p.SecurityContext.DeepCopy()
	}
	if p.RestartPolicy != "" {
		spec.RestartPolicy = p.RestartPolicy
	}
}

// mergeContainers patches the containers of the same name and appends the others.
func mergeContainers(cs, patch []corev1.Container) []corev1.Container {
	for _, p := range patch {
		i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == p.Name })
		if i < 0 {
			cs = append(cs, *p.DeepCopy())
			continue
		}
		c := &cs[i]
		if p.Image != "" {
			c.Image = p.Image
		}
		if p.Command != nil {
			c.Command = slices.Clone(p.Command)
		}
		if p.Args != nil {
			c.Args = slices.Clone(p.Args)
		}
		for _, e := range p.Env {
			c.Env = upsert(c.Env, *e.DeepCopy(), func(f corev1.EnvVar) bool { return f.Name == e.Name })
		}
		for _, m := range p.VolumeMounts {
			c.VolumeMounts = upsert(c.VolumeMounts, m, func(n corev1.VolumeMount) bool { return n.MountPath == m.MountPath })
		}
		for _, port := range p.Ports {
			c.Ports = upsert(c.Ports, port, func(q corev1.ContainerPort) bool { return q.ContainerPort == port.ContainerPort })
		}
		for name, q := range p.Resources.Requests {
			ensureList(&c.Resources.Requests)[name] = q.DeepCopy()
		}
		for name, q := range p.Resources.Limits {
			ensureList(&c.Resources.Limits)[name] = q.DeepCopy()
		}
		if p.LivenessProbe != nil {
			c.LivenessProbe = p.LivenessProbe.DeepCopy()
		}
		if p.ReadinessProbe != nil {
			c.ReadinessProbe = p.ReadinessProbe.DeepCopy()
		}
	}
	return cs
}

// upsert replaces the first element of list that matches, or appends v.
func upsert[T any](list []T, v T, match func(T) bool) []T {
	if i := slices.IndexFunc(list, match); i >= 0 {
		list[i] = v
		return list
	}
	return append(list, v)
}

func ensure(m *map[string]string) map[string]string {
	if *m == nil {
		*m = map[string]string{}
	}
	return *m
}

func ensureList(m *corev1.ResourceList) corev1.ResourceList {
	if *m == nil {
		*m = corev1.ResourceList{}
	}
	return *m
}
