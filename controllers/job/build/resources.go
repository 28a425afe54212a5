package build

import (
	"strings"

	"gopkg.in/inf.v0"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// podUsage is what one pod built from spec counts against a ResourceQuota, the measure Volcano
// sums into a PodGroup's minResources (it calls the quota evaluator's PodUsageFunc): "pods" and
// "count/pods" at 1; cpu, memory and ephemeral-storage requests under both their plain and their
// "requests." names, their limits under "limits."; hugepages requests under both names; extended
// resources under "requests.<name>" and, as Volcano adds, under their plain name too.
func podUsage(spec *corev1.PodSpec) corev1.ResourceList {
	requests := podRequests(spec)
	limits := podLimits(spec)
	usage := corev1.ResourceList{
		"count/pods":        *resource.NewQuantity(1, resource.DecimalSI),
		corev1.ResourcePods: resource.MustParse("1"),
	}
	plain := []struct{ name, requests, limits corev1.ResourceName }{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	}
	for _, r := range plain {
		if q, ok := requests[r.name]; ok {
			usage[r.name] = q.DeepCopy()
			usage[r.requests] = q.DeepCopy()
		}
		if q, ok := limits[r.name]; ok {
			usage[r.limits] = q.DeepCopy()
		}
	}
	for name, q := range requests {
		switch {
		case strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
			usage[name] = q.DeepCopy()
			usage[corev1.DefaultResourceRequestsPrefix+name] = q.DeepCopy()
		case isExtendedResource(name):
			usage[corev1.DefaultResourceRequestsPrefix+name] = q.DeepCopy()
			usage[name] = q.DeepCopy()
		}
	}
	return usage
}

// isExtendedResource tells a resource outside the kubernetes.io domain that a quota may count as
// requests.<name>.
func isExtendedResource(name corev1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) ||
		strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+s)) == 0
}

// podRequests is the effective request of a pod, as the scheduler and the quota see it: the sum of
// its containers and sidecars (restartable init containers), raised to what any init container
// needs while it runs beside the sidecars started before it; then pod-level cpu and memory
// requests, when set, replace the aggregate; then the runtime overhead is added.
func podRequests(spec *corev1.PodSpec) corev1.ResourceList {
	reqs := aggregate(spec, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Requests })
	if spec.Resources != nil {
		for name, q := range spec.Resources.Requests {
			if podLevel(name) {
				reqs[name] = q.DeepCopy()
			}
		}
	}
	add(reqs, spec.Overhead)
	return reqs
}

// podLimits is podRequests for limits, except that pod-level limits apply whenever pod-level
// resources are set, and the overhead is added only to limits that are set and not zero.
func podLimits(spec *corev1.PodSpec) corev1.ResourceList {
	limits := aggregate(spec, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Limits })
	if spec.Resources != nil && (hasPodLevel(spec.Resources.Requests) || hasPodLevel(spec.Resources.Limits)) {
		for name, q := range spec.Resources.Limits {
			if podLevel(name) {
				limits[name] = q.DeepCopy()
			}
		}
	}
	for name, q := range spec.Overhead {
		if v, ok := limits[name]; ok && !v.IsZero() {
			v.Add(q)
			limits[name] = v
		}
	}
	return limits
}

// aggregate applies the sidecar-aware formula of Kubernetes' resource helpers to the list of
// each container that of picks (its requests or its limits).
func aggregate(spec *corev1.PodSpec, of func(corev1.ResourceRequirements) corev1.ResourceList) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, c := range spec.Containers {
		add(total, of(c.Resources))
	}
	sidecars := corev1.ResourceList{}
	initPeak := corev1.ResourceList{}
	for _, c := range spec.InitContainers {
		own := of(c.Resources)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			// A sidecar runs for the pod's whole life, and beside every init container after it.
			add(total, own)
			add(sidecars, own)
			raise(initPeak, sidecars)
			continue
		}
		running := corev1.ResourceList{}
		add(running, own)
		add(running, sidecars)
		raise(initPeak, running)
	}
	raise(total, initPeak)
	return total
}

// podLevel tells the resources a pod may set for itself as a whole.
func podLevel(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory
}

func hasPodLevel(list corev1.ResourceList) bool {
	for name := range list {
		if podLevel(name) {
			return true
		}
	}
	return false
}

// add adds every quantity of b to a.
func add(a, b corev1.ResourceList) {
	for name, q := range b {
		if v, ok := a[name]; ok {
			v.Add(q)
			a[name] = v
		} else {
			a[name] = q.DeepCopy()
		}
	}
}

// raise sets every quantity of a to at least the one of b.
func raise(a, b corev1.ResourceList) {
	for name, q := range b {
		if v, ok := a[name]; !ok || v.Cmp(q) < 0 {
			a[name] = q.DeepCopy()
		}
	}
}

// times adds n copies of usage to total, by multiplication: a pod's usage times the replicas
// costs the same whatever the replicas are.
func times(total, usage corev1.ResourceList, n int32) {
	if n <= 0 {
		return
	}
	scaled := make(corev1.ResourceList, len(usage))
	for name, q := range usage {
		scaled[name] = multiply(q, int64(n))
	}
	add(total, scaled)
}

// multiply is q×n. Quantity.Mul works on the scaled int64 it keeps when it can; a product beyond
// it (a huge request times many replicas) is taken exactly in inf.Dec instead of overflowing.
func multiply(q resource.Quantity, n int64) resource.Quantity {
	product := q.DeepCopy()
	if product.Mul(n) {
		return product
	}
	dec := new(inf.Dec).Mul(q.AsDec(), inf.NewDec(n, 0))
	return *resource.NewDecimalQuantity(*dec, q.Format)
}
