package core

import (
	"cmp"
	"encoding/binary"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// cycle is one run of Allocate: the snapshot turned into mutable state, and
// the caches that live as long as the cycle.
type cycle struct {
	opts    Options
	ix      *resourceIndex
	nodes   *nodeSet
	queues  []*queueState // by name; only queues some job names
	queueOf map[string]*queueState
	jobs    []*jobState // by key
	tasks   []taskState // all pending tasks, job by job

	// sigs interns node-constraint signatures; their node checks are
	// computed on first use.
	sigIDs map[string]int32
	sigs   []*signature
	// shapes interns (signature, request): tasks of one shape are
	// interchangeable. capacity[s] is an upper bound on how many more tasks
	// of shape s fit the cluster (-1 unknown), capacityWhy the failure that
	// set it. Tentative placements leave the bound valid; each committed
	// placement of the shape lowers it by one.
	shapeIDs    map[string]int32
	capacity    []int
	capacityWhy []string
	shapeDim    []int // the shape's dominant resource
	// shapeDynamic: the nodes that can take a task of the shape change as
	// tasks of the shape are placed (its own required pod (anti-)affinity):
	// no capacity bound applies to it.
	shapeDynamic []bool

	// pods is the cycle's inter-pod affinity; nil when no pod has a pod
	// (anti-)affinity term.
	pods *interPod

	bindings []Binding
	stats    Stats

	// Buffers reused across jobs and turns.
	scratch []int64
	keyBuf  []byte
	stmt    statement
	order   []*taskState
	cands   []int32

	// exhaustive turns the shortcuts (capacity bounds, failed shapes, fast
	// rejects) off; tests use it to show they change no outcome.
	exhaustive bool
}

// signature is one distinct set of node constraints.
type signature struct {
	task     *Task // the first task seen with it
	checked  bool
	eligible []bool   // by node index
	reasons  []string // why not, by node index
}

// jobState is one job during the cycle.
type jobState struct {
	job   *Job
	key   string
	queue *queueState // nil when the queue does not exist
	phase vcv1beta1.PodGroupPhase
	// minTask is MinTaskMember when it is enforced (MinMember at least its sum).
	minTask      map[string]int32
	placed       int32            // pods on nodes, including this cycle's
	placedByTask map[string]int32 // the same, per task name, kept only with minTask
	minRes       []int64
	minResGap    corev1.ResourceName // a resource of minResources no node offers
	request      []float64           // what the job holds and wants, for fair share (chargeRequest)
	tasks        []*taskState        // pending, by task name then index
	cursor       int                 // next task an extra turn looks at
	failed       map[int32]string    // task shapes that found no room, and why
	ready        bool
	admittedNow  bool // went Pending → Inqueue in this cycle
	cond         *Condition
	bound        int32 // bindings this cycle
}

// taskState is one pending pod during the cycle.
type taskState struct {
	task    *Task
	req     []int64
	missing corev1.ResourceName // a requested resource no node offers
	aff     *taskAffinity       // its part in inter-pod affinity, nil for none
	sig     int32
	shape   int32
	dim     int32 // dominant resource, the best-fit order it searches
	placed  bool
}

func newCycle(snap Snapshot, opts Options) *cycle {
	ix := newResourceIndex(snap.Nodes)
	c := &cycle{
		opts:     opts,
		ix:       ix,
		nodes:    newNodeSet(snap.Nodes, ix),
		queueOf:  map[string]*queueState{},
		sigIDs:   map[string]int32{},
		shapeIDs: map[string]int32{},
	}
	c.stats.Nodes = len(snap.Nodes)
	c.stats.Jobs = len(snap.Jobs)
	c.pods = newInterPod(&snap, c.nodes)
	total := floats(c.nodes.total)
	queueSpec := map[string]*Queue{}
	for i := range snap.Queues {
		queueSpec[snap.Queues[i].Name] = &snap.Queues[i]
	}
	ntasks := 0
	for i := range snap.Jobs {
		ntasks += len(snap.Jobs[i].Pending)
	}
	a := newArena(len(snap.Jobs), ntasks, ix.dims())
	c.tasks = make([]taskState, 0, ntasks) // never grows: &c.tasks[i] stay put
	c.jobs = make([]*jobState, 0, len(snap.Jobs))
	c.bindings = make([]Binding, 0, ntasks)
	c.scratch = make([]int64, ix.dims())
	// Jobs are taken in key order, so that every sum over them is made in
	// the same order whatever the snapshot's.
	order := make([]int, len(snap.Jobs))
	keys := make([]string, len(snap.Jobs))
	for i := range snap.Jobs {
		order[i], keys[i] = i, snap.Jobs[i].JobKey()
	}
	slices.SortFunc(order, func(x, y int) int { return strings.Compare(keys[x], keys[y]) })
	jobs := make([]jobState, len(snap.Jobs))
	for i, at := range order {
		j := &jobs[i]
		j.key = keys[at]
		c.addJob(&snap.Jobs[at], j, a, queueSpec, total)
		c.jobs = append(c.jobs, j)
	}
	// Shapes come once every task's pod (anti-)affinity terms are known:
	// those of others that select a task are part of its shape.
	if c.pods != nil {
		c.pods.placeSnapshotPods(snap.Pods)
	}
	for _, j := range c.jobs {
		for _, t := range j.tasks {
			c.shapeTask(t, j.job.Namespace)
		}
	}
	slices.SortFunc(c.queues, func(x, y *queueState) int { return strings.Compare(x.name, y.name) })
	deserve(c.queues, total)
	return c
}

// addJob builds the state of a job and of its pending pods.
func (c *cycle) addJob(job *Job, j *jobState, a *arena, queueSpec map[string]*Queue, total []float64) {
	j.minRes, j.request = a.ints(), a.floats()
	c.newJob(job, j, queueSpec, total)
	j.tasks = a.taskRefs(len(job.Pending))
	for k := range job.Pending {
		t := &job.Pending[k]
		ts := taskState{task: t, req: a.ints()}
		ts.missing = c.ix.vector(t.Requests, ts.req)
		ts.req[dimPods] = 1
		ts.sig = c.internSignature(t)
		if c.pods != nil {
			ts.aff = c.pods.addTask(t, job.Namespace)
		}
		c.tasks = append(c.tasks, ts)
		j.tasks[k] = &c.tasks[len(c.tasks)-1]
	}
	slices.SortFunc(j.tasks, compareTasks)
	c.chargeRequest(j)
}

// arena hands out the cycle's small vectors from a few large allocations:
// a cycle over 10,000 pods would otherwise spend much of its time in the GC.
type arena struct {
	dims int
	i    []int64
	f    []float64
	refs []*taskState
}

// newArena has room for a vector of each kind per job, an int vector per
// task, and a reference per task.
func newArena(jobs, tasks, dims int) *arena {
	return &arena{
		dims: dims,
		i:    make([]int64, (jobs+tasks)*dims),
		f:    make([]float64, jobs*dims),
		refs: make([]*taskState, tasks),
	}
}

func (a *arena) ints() []int64 {
	v := a.i[:a.dims:a.dims]
	a.i = a.i[a.dims:]
	return v
}

func (a *arena) floats() []float64 {
	v := a.f[:a.dims:a.dims]
	a.f = a.f[a.dims:]
	return v
}

func (a *arena) taskRefs(n int) []*taskState {
	v := a.refs[:n:n]
	a.refs = a.refs[n:]
	return v
}

// newJob fills in j (whose key, minRes and request are set) and charges
// its queue with what the job holds.
func (c *cycle) newJob(job *Job, j *jobState, queueSpec map[string]*Queue, total []float64) {
	j.job, j.phase = job, job.Phase
	if j.phase == "" {
		j.phase = vcv1beta1.PodGroupPending
	}
	var sum int64 // in int64: minimums a PodGroup made too large must not wrap to a small sum
	for _, n := range job.MinTaskMember {
		sum += int64(n)
	}
	if len(job.MinTaskMember) > 0 && int64(job.MinMember) >= sum {
		j.minTask = job.MinTaskMember
		j.placedByTask = map[string]int32{}
	}
	for name, n := range job.Bound {
		j.placed += n
		if j.minTask != nil {
			j.placedByTask[name] = n
		}
	}
	j.minResGap = c.ix.quotaVector(job.MinResources, j.minRes)
	j.ready = j.isReady()

	spec, ok := queueSpec[job.Queue]
	if !ok {
		return
	}
	q := c.queueOf[job.Queue]
	if q == nil {
		q = c.newQueue(spec, total)
		c.queueOf[q.name] = q
		c.queues = append(c.queues, q)
	}
	j.queue = q
	alloc := c.scratch
	clear(alloc)
	c.ix.vector(job.Allocated, alloc)
	for d, x := range alloc {
		if d != dimPods {
			q.allocated[d] += float64(x)
			j.request[d] = float64(x) // what it holds; chargeRequest adds the rest
		}
	}
	if j.phase == vcv1beta1.PodGroupInqueue {
		for d, x := range j.minRes {
			if d != dimPods {
				q.inqueue[d] += max(0, float64(x)-float64(alloc[d]))
			}
		}
	}
}

// chargeRequest adds what the job asks of its queue, for fair share: what
// it holds plus its pending pods, and for a gang not yet running at least
// its minResources, whether or not its pods exist yet. A job of a closed
// queue asks for nothing new.
func (c *cycle) chargeRequest(j *jobState) {
	q := j.queue
	if q == nil {
		return
	}
	if q.open && j.phase != vcv1beta1.PodGroupCompleted {
		for _, t := range j.tasks {
			for d, x := range t.req {
				if d != dimPods {
					j.request[d] += float64(x)
				}
			}
		}
		if j.phase == vcv1beta1.PodGroupPending || j.phase == vcv1beta1.PodGroupInqueue {
			for d, x := range j.minRes {
				if d != dimPods {
					j.request[d] = max(j.request[d], float64(x))
				}
			}
		}
	}
	for d := range j.request {
		q.request[d] += j.request[d]
	}
}

func (c *cycle) newQueue(spec *Queue, total []float64) *queueState {
	r := c.ix.dims()
	q := &queueState{
		name:       spec.Name,
		weight:     max(spec.Weight, 1),
		state:      spec.State,
		open:       spec.State == "" || spec.State == vcv1beta1.QueueStateOpen,
		capability: c.ix.capabilityVector(spec.Capability),
		realCap:    make([]float64, r),
		request:    make([]float64, r),
		allocated:  make([]float64, r),
		deserved:   make([]float64, r),
		inqueue:    make([]float64, r),
	}
	for d := range q.realCap {
		q.realCap[d] = min(q.capability[d], total[d])
	}
	return q
}

// isReady: minMember pods placed, and minTaskMember of each task if enforced.
func (j *jobState) isReady() bool {
	if j.placed < j.job.MinMember {
		return false
	}
	for name, n := range j.minTask {
		if j.placedByTask[name] < n {
			return false
		}
	}
	return true
}

// needed is how many more pods the gang must place to be ready.
func (j *jobState) needed() int {
	need := int(j.job.MinMember) - int(j.placed)
	byTask := 0
	for name, n := range j.minTask {
		byTask += int(max(0, n-j.placedByTask[name]))
	}
	return max(need, byTask, 0)
}

// compareTasks orders a job's tasks by task name, then by pod name with
// shorter names first, which puts <job>-<task>-<index> in index order.
func compareTasks(a, b *taskState) int {
	return cmp.Or(
		strings.Compare(a.task.Name, b.task.Name),
		cmp.Compare(len(a.task.Key), len(b.task.Key)),
		strings.Compare(a.task.Key, b.task.Key),
	)
}

// compareJobs is the order of jobs within a queue: higher priority first,
// then gangs still waiting for minMember before jobs placing extra pods
// (Volcano's gang job order), then older first, then by name.
func compareJobs(a, b *jobState) int {
	if a.job.Priority != b.job.Priority {
		return cmp.Compare(b.job.Priority, a.job.Priority)
	}
	if a.ready != b.ready {
		if b.ready {
			return -1
		}
		return 1
	}
	return cmp.Or(
		a.job.CreationTime.Compare(b.job.CreationTime),
		strings.Compare(a.key, b.key),
	)
}

// compareQueues: lowest share first, then higher weight, then by name.
func compareQueues(a, b *queueState) int {
	return cmp.Or(
		cmp.Compare(a.share, b.share),
		cmp.Compare(b.weight, a.weight),
		strings.Compare(a.name, b.name),
	)
}

func (c *cycle) internSignature(t *Task) int32 {
	key := constraintKey(t)
	if id, ok := c.sigIDs[key]; ok {
		return id
	}
	id := int32(len(c.sigs))
	c.sigIDs[key] = id
	c.sigs = append(c.sigs, &signature{task: t})
	return id
}

// signatureOf returns signature id with its node checks done.
func (c *cycle) signatureOf(id int32) *signature {
	s := c.sigs[id]
	if s.checked {
		return s
	}
	s.checked = true
	s.eligible = make([]bool, len(c.nodes.nodes))
	s.reasons = make([]string, len(c.nodes.nodes))
	for i, n := range c.nodes.nodes {
		s.reasons[i] = staticReason(s.task, n)
		s.eligible[i] = s.reasons[i] == ""
	}
	return s
}

// shapeTask gives a task of a job of namespace ns its part in inter-pod
// affinity and its shape: tasks of one shape are interchangeable.
func (c *cycle) shapeTask(t *taskState, ns string) {
	var class int32
	dynamic := false
	if c.pods != nil {
		t.aff = c.pods.join(t.task, ns, t.aff)
		class, dynamic = c.pods.class(t.aff)
	}
	c.keyBuf = shapeKey(c.keyBuf[:0], t.sig, class, t.req, t.missing)
	t.shape = c.internShape(c.keyBuf, t.req, dynamic)
	t.dim = int32(c.shapeDim[t.shape])
}

func shapeKey(buf []byte, sig, class int32, req []int64, missing corev1.ResourceName) []byte {
	buf = binary.AppendVarint(buf, int64(sig))
	buf = binary.AppendVarint(buf, int64(class))
	for _, x := range req {
		buf = binary.AppendVarint(buf, x)
	}
	return append(buf, missing...)
}

func (c *cycle) internShape(key []byte, req []int64, dynamic bool) int32 {
	if id, ok := c.shapeIDs[string(key)]; ok {
		return id
	}
	id := int32(len(c.capacity))
	c.shapeIDs[string(key)] = id
	c.capacity = append(c.capacity, -1)
	c.capacityWhy = append(c.capacityWhy, "")
	c.shapeDim = append(c.shapeDim, c.nodes.dominant(req))
	c.shapeDynamic = append(c.shapeDynamic, dynamic)
	return id
}
