package core

import (
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A cycle turns every ResourceList into a vector of int64 with one entry per
// resource the nodes offer: milli-CPU, bytes of memory, pods, then the other
// resources by name. Arithmetic on Quantities is too slow for the inner loop.
const (
	dimCPU    = 0
	dimMemory = 1
	dimPods   = 2
)

// resourceIndex maps resource names to vector positions for one cycle.
type resourceIndex struct {
	names []corev1.ResourceName
	pos   map[corev1.ResourceName]int
}

// newResourceIndex indexes cpu, memory, pods and every other resource some
// node lists as allocatable.
func newResourceIndex(nodes []Node) *resourceIndex {
	ix := &resourceIndex{
		names: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods},
		pos:   map[corev1.ResourceName]int{},
	}
	var extra []corev1.ResourceName
	seen := map[corev1.ResourceName]bool{}
	for i := range nodes {
		for name := range nodes[i].Allocatable {
			if name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourcePods || seen[name] {
				continue
			}
			seen[name] = true
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	ix.names = append(ix.names, extra...)
	for i, name := range ix.names {
		ix.pos[name] = i
	}
	return ix
}

func (ix *resourceIndex) dims() int { return len(ix.names) }

// vector writes list into dst (len dims, zeroed by the caller). It returns
// the first (by name) resource the list asks a positive amount of that no
// node offers, or "" when there is none.
func (ix *resourceIndex) vector(list corev1.ResourceList, dst []int64) corev1.ResourceName {
	var missing corev1.ResourceName
	for name, q := range list {
		var i int
		switch name {
		case corev1.ResourceCPU:
			dst[dimCPU] = q.MilliValue()
			continue
		case corev1.ResourceMemory:
			i = dimMemory
		case corev1.ResourcePods:
			i = dimPods
		default:
			var ok bool
			if i, ok = ix.pos[name]; !ok {
				if q.Sign() > 0 && (missing == "" || name < missing) {
					missing = name
				}
				continue
			}
		}
		dst[i] = q.Value()
	}
	return missing
}

// amount is a quantity in the unit of dimension i: milli-CPU, else units.
func amount(i int, q *resource.Quantity) int64 {
	if i == dimCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// quotaVector is vector for a PodGroup's minResources, which Volcano's job
// controller fills in ResourceQuota style ("requests.cpu", "limits.cpu",
// "count/pods", "pods" beside "cpu"): like Volcano, only the plain resource
// names count, and pods not at all.
func (ix *resourceIndex) quotaVector(list corev1.ResourceList, dst []int64) corev1.ResourceName {
	var missing corev1.ResourceName
	for name, q := range list {
		s := string(name)
		if name == corev1.ResourcePods || strings.HasPrefix(s, "requests.") ||
			strings.HasPrefix(s, "limits.") || strings.HasPrefix(s, "count/") {
			continue
		}
		i, ok := ix.pos[name]
		if !ok {
			if q.Sign() > 0 && (missing == "" || name < missing) {
				missing = name
			}
			continue
		}
		dst[i] = amount(i, &q)
	}
	return missing
}

// floats converts a vector for queue accounting, which leaves pods out.
func floats(v []int64) []float64 {
	f := make([]float64, len(v))
	for i, x := range v {
		if i != dimPods {
			f[i] = float64(x)
		}
	}
	return f
}

// capabilityVector is a queue capability as floats: +Inf where the queue
// names no limit (or a non-positive one, as Volcano reads it).
func (ix *resourceIndex) capabilityVector(list corev1.ResourceList) []float64 {
	f := make([]float64, ix.dims())
	for i := range f {
		f[i] = math.Inf(1)
	}
	f[dimPods] = 0
	for name, q := range list {
		i, ok := ix.pos[name]
		if !ok || i == dimPods || q.Sign() <= 0 {
			continue
		}
		if i == dimCPU {
			f[i] = float64(q.MilliValue())
		} else {
			f[i] = float64(q.Value())
		}
	}
	return f
}

// format renders an amount of resource dimension i for messages.
func (ix *resourceIndex) format(i int, v float64) string {
	n := int64(math.Round(v))
	switch i {
	case dimCPU:
		if n%1000 == 0 {
			return strconv.FormatInt(n/1000, 10)
		}
		return strconv.FormatInt(n, 10) + "m"
	case dimMemory:
		return resource.NewQuantity(n, resource.BinarySI).String()
	default:
		return resource.NewQuantity(n, resource.DecimalSI).String()
	}
}
