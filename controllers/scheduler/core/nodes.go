package core

import (
	"math"
	"slices"
	"sort"
	"strings"
)

// Node choice is best fit (bin packing): among the nodes that can take the
// task, the one left with the least free amount of the task's dominant
// resource, then the lower node name. Packing keeps whole nodes free, so the
// next large gang member still finds room; spreading (least-allocated) would
// leave a little free everywhere and strand big tasks and big gangs. Best
// fit on one dimension can also be searched fast: each dimension in use
// keeps the nodes sorted by free amount, a binary search finds the first node
// with enough, and a walk forward returns the first one that passes the other
// checks, which is the best by construction.

// nodeSet is the cycle's mutable view of the nodes: free resources and the
// sorted orders, updated on every placement and undone on every discard.
type nodeSet struct {
	nodes  []*Node // by name
	r      int     // vector dimensions
	free   []int64 // node i's free resources at [i*r : (i+1)*r]
	orders []*freeOrder
	// meanAlloc is the mean allocatable per dimension, used to find a task's
	// dominant resource.
	meanAlloc []float64
	// total and used sum allocatable and used over the schedulable nodes,
	// as the snapshot has them; freeSum sums free over the same nodes as
	// placements come and go.
	total, used, freeSum []int64
}

// freeOrder keeps node indices sorted by (free amount of dim, index).
type freeOrder struct {
	dim int
	seq []int32 // node indices, sorted
	at  []int32 // at[node] is its position in seq
}

func newNodeSet(nodes []Node, ix *resourceIndex) *nodeSet {
	ns := &nodeSet{r: ix.dims()}
	for i := range nodes {
		ns.nodes = append(ns.nodes, &nodes[i])
	}
	slices.SortStableFunc(ns.nodes, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
	ns.free = make([]int64, len(ns.nodes)*ns.r)
	ns.orders = make([]*freeOrder, ns.r)
	ns.meanAlloc = make([]float64, ns.r)
	ns.total = make([]int64, ns.r)
	ns.used = make([]int64, ns.r)
	ns.freeSum = make([]int64, ns.r)
	alloc := make([]int64, ns.r)
	used := make([]int64, ns.r)
	for i, n := range ns.nodes {
		clear(alloc)
		clear(used)
		ix.vector(n.Allocatable, alloc)
		ix.vector(n.Used, used)
		if _, ok := n.Allocatable["pods"]; !ok {
			alloc[dimPods] = math.MaxInt32
		}
		f := ns.freeOf(i)
		for d := range alloc {
			f[d] = alloc[d] - used[d]
			ns.meanAlloc[d] += float64(alloc[d])
			if !n.Unschedulable {
				ns.total[d] += alloc[d]
				ns.used[d] += used[d]
				ns.freeSum[d] += f[d]
			}
		}
	}
	if len(ns.nodes) > 0 {
		for d := range ns.meanAlloc {
			ns.meanAlloc[d] /= float64(len(ns.nodes))
		}
	}
	return ns
}

func (ns *nodeSet) freeOf(i int) []int64 { return ns.free[i*ns.r : (i+1)*ns.r] }

// fits reports whether node i has room for req in every dimension.
func (ns *nodeSet) fits(i int, req []int64) bool {
	f := ns.freeOf(i)
	for d, x := range req {
		if x > f[d] {
			return false
		}
	}
	return true
}

// dominant is the dimension in which req weighs most against an average
// node; pods for a task that asks for nothing else.
func (ns *nodeSet) dominant(req []int64) int {
	best, weight := dimPods, 0.0
	for d, x := range req {
		if d == dimPods || x <= 0 || ns.meanAlloc[d] <= 0 {
			continue
		}
		if w := float64(x) / ns.meanAlloc[d]; w > weight {
			best, weight = d, w
		}
	}
	return best
}

// order returns the sorted order of dimension d, building it on first use.
func (ns *nodeSet) order(d int) *freeOrder {
	if o := ns.orders[d]; o != nil {
		return o
	}
	o := &freeOrder{dim: d, seq: make([]int32, len(ns.nodes)), at: make([]int32, len(ns.nodes))}
	for i := range o.seq {
		o.seq[i] = int32(i)
	}
	slices.SortFunc(o.seq, func(a, b int32) int { return ns.compare(d, a, b) })
	for p, i := range o.seq {
		o.at[i] = int32(p)
	}
	ns.orders[d] = o
	return o
}

func (ns *nodeSet) compare(d int, a, b int32) int {
	fa, fb := ns.free[int(a)*ns.r+d], ns.free[int(b)*ns.r+d]
	switch {
	case fa < fb:
		return -1
	case fa > fb:
		return 1
	default:
		return int(a - b)
	}
}

// bestFit returns the node for req under the best-fit rule among the nodes
// eligible[i], or -1 when none has room.
func (ns *nodeSet) bestFit(req []int64, dim int, eligible []bool) int {
	for _, i := range ns.withRoom(req, dim) {
		if eligible[i] && ns.fits(int(i), req) {
			return int(i)
		}
	}
	return -1
}

// withRoom is the nodes with at least req's amount of dimension dim free,
// in best-fit order (least free first).
func (ns *nodeSet) withRoom(req []int64, dim int) []int32 {
	o := ns.order(dim)
	need := req[dim]
	start := sort.Search(len(o.seq), func(p int) bool {
		return ns.free[int(o.seq[p])*ns.r+dim] >= need
	})
	return o.seq[start:]
}

// room is how many pods asking req node i has room for.
func (ns *nodeSet) room(i int, req []int64) int64 {
	f := ns.freeOf(i)
	n := int64(math.MaxInt64)
	for d, x := range req {
		if x > 0 {
			n = min(n, f[d]/x)
		}
	}
	return n
}

// take subtracts req from node i; give adds it back.
func (ns *nodeSet) take(i int, req []int64) {
	f := ns.freeOf(i)
	for d, x := range req {
		f[d] -= x
	}
	if !ns.nodes[i].Unschedulable {
		for d, x := range req {
			ns.freeSum[d] -= x
		}
	}
	ns.reorder(i, req)
}

func (ns *nodeSet) give(i int, req []int64) {
	f := ns.freeOf(i)
	for d, x := range req {
		f[d] += x
	}
	if !ns.nodes[i].Unschedulable {
		for d, x := range req {
			ns.freeSum[d] += x
		}
	}
	ns.reorder(i, req)
}

// freeInTotal: the schedulable nodes together have n times req free,
// fragmentation and node constraints aside.
func (ns *nodeSet) freeInTotal(req []int64, n int) bool {
	for d, x := range req {
		// A product beyond int64 (a gang's minMember times a request) exceeds anything free;
		// multiplied, it would wrap and read as room.
		if x > 0 && int64(n) > math.MaxInt64/x || x*int64(n) > ns.freeSum[d] {
			return false
		}
	}
	return true
}

// reorder restores the sorted orders after node i's free resources changed
// by req. A node moves only past nodes with free amounts between its old
// and new ones, which best fit keeps few.
func (ns *nodeSet) reorder(i int, req []int64) {
	for d, o := range ns.orders {
		if o == nil || req[d] == 0 {
			continue
		}
		p := int(o.at[i])
		for p > 0 && ns.compare(d, o.seq[p-1], int32(i)) > 0 {
			o.seq[p] = o.seq[p-1]
			o.at[o.seq[p]] = int32(p)
			p--
		}
		for p < len(o.seq)-1 && ns.compare(d, o.seq[p+1], int32(i)) < 0 {
			o.seq[p] = o.seq[p+1]
			o.at[o.seq[p]] = int32(p)
			p++
		}
		o.seq[p] = int32(i)
		o.at[i] = int32(p)
	}
}
