package scheduler

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/controllers/scheduler/core"
)

// groupView is what the status writer needs of a PodGroup beyond the
// cycle's decision: the PodGroup as read, and its pods counted by phase
// the way Volcano counts its tasks.
type groupView struct {
	pg                         *vcv1beta1.PodGroup
	running, succeeded, failed int32
	// scheduled counts pods on a node or finished (Volcano's
	// ScheduledStatus: bound, running, succeeded, failed), completed those
	// finished; pending the pods waiting for a node.
	scheduled, completed, pending int32
}

// view is a cycle's view of the cluster: the Snapshot Allocate decides on,
// and what acting on its Result needs.
type view struct {
	snap    core.Snapshot
	groups  map[string]*groupView // by namespace/name
	pending map[string]*podEntry  // the pods of snap's pending tasks, by namespace/name
}

// view turns what the informers hold into the cycle's view, with the
// shift's memory applied: PodGroups it wrote that the informer has not
// caught up with, and pods it bound that the informer does not show bound
// yet (assumed: on their node, not to be placed again).
func (s *shift) view(in inputs, now time.Time) *view {
	for i, pg := range in.podGroups {
		in.podGroups[i] = s.written.Latest(toolscache.MetaObjectToName(pg).String(), pg)
	}
	return buildView(in, s.assumed, &s.pods, now)
}

// buildView is the pure part of view. It prunes assumed of the pods the
// informers now show bound, recreated, or long gone.
func buildView(in inputs, assumed assumedPods, pods *podCache, now time.Time) *view {
	pods.startCycle()
	defer pods.sweep()
	var snap core.Snapshot
	usage := map[string]*nodeUsage{}
	for _, n := range in.nodes {
		if !nodeReady(n) {
			continue // kube-scheduler leaves them out too (a NotReady taint)
		}
		snap.Nodes = append(snap.Nodes, core.Node{
			Name: n.Name, Allocatable: n.Status.Allocatable, Labels: n.Labels,
			Taints: n.Spec.Taints, Unschedulable: n.Spec.Unschedulable,
		})
		usage[n.Name] = &nodeUsage{list: corev1.ResourceList{}}
	}
	if len(in.namespaces) > 0 {
		// The informer's label maps, shared read-only for the cycle.
		snap.Namespaces = make(map[string]map[string]string, len(in.namespaces))
		for _, ns := range in.namespaces {
			snap.Namespaces[ns.Name] = ns.Labels
		}
	}
	for _, q := range in.queues {
		snap.Queues = append(snap.Queues, core.Queue{
			Name: q.Name, Weight: q.Spec.Weight, Capability: q.Spec.Capability, State: q.Status.State,
		})
	}

	priorities := newPriorities(in)
	type name struct{ namespace, name string }
	jobs := make(map[name]int, len(in.podGroups)) // → index in snap.Jobs and views
	views := make([]groupView, len(in.podGroups))
	groups := make(map[string]*groupView, len(in.podGroups))
	snap.Jobs = make([]core.Job, 0, len(in.podGroups))
	for i, pg := range in.podGroups {
		jobs[name{pg.Namespace, pg.Name}] = i
		views[i].pg = pg
		groups[toolscache.MetaObjectToName(pg).String()] = &views[i]
		snap.Jobs = append(snap.Jobs, jobOf(pg, priorities))
	}
	groupOf := func(pod *corev1.Pod) (*core.Job, *groupView) {
		group := pod.Annotations[vcv1beta1.KubeGroupNameAnnotationKey]
		if group == "" {
			return nil, nil
		}
		if i, ok := jobs[name{pod.Namespace, group}]; ok {
			return &snap.Jobs[i], &views[i]
		}
		return nil, nil
	}

	// Inter-pod affinity looks at the pods on the nodes: at all of them
	// when a pod to place has a pod (anti-)affinity term, else only at
	// those that have one (whose terms may select the pods to place).
	allPods := slices.ContainsFunc(in.unbound, podAffinityOf)
	if allPods {
		snap.Pods = make([]core.PlacedPod, 0, len(in.bound))
	}

	// Bound pods: node usage, and the placed pods of each PodGroup.
	boundUIDs := make(map[types.UID]bool, len(in.bound))
	for _, pod := range in.bound {
		if pod.Spec.NodeName == "" {
			continue
		}
		boundUIDs[pod.UID] = true
		e := pods.get(pod)
		if !podFinished(pod) {
			if u := usage[pod.Spec.NodeName]; u != nil {
				u.add(e.task.Requests)
			}
			if allPods || podAffinityOf(pod) {
				snap.Pods = append(snap.Pods, placedPod(pod, pod.Spec.NodeName))
			}
		}
		if job, g := groupOf(pod); job != nil {
			countBound(job, g, pod, e.task.Requests)
		}
	}

	// Unbound pods of the served names: assumed ones count as bound, the
	// rest wait for a node.
	served := map[string]bool{}
	for _, name := range in.served {
		served[name] = true
	}
	present := map[string]bool{} // assumed pods the unbound informers still show
	pending := map[string]*podEntry{}
	for _, pod := range in.unbound {
		if pod.Spec.NodeName != "" || !served[pod.Spec.SchedulerName] || boundUIDs[pod.UID] {
			continue
		}
		key := toolscache.MetaObjectToName(pod).String()
		if a, ok := assumed[key]; ok {
			if a.uid == pod.UID {
				present[key] = true
				continue
			}
			delete(assumed, key) // the pod was deleted and made anew
		}
		if !waiting(pod) {
			continue
		}
		job, g := groupOf(pod)
		if job == nil {
			continue // no PodGroup (yet): nothing to schedule it with
		}
		e := pods.get(pod)
		if job.Pending == nil { // room for a gang's pods at once: most come together
			// A hint only, capped: minMember is what the PodGroup says, not pods that exist,
			// and a PodGroup of minMember 2147483647 must not cost 2^31 slots.
			job.Pending = make([]core.Task, 0, min(max(job.MinMember, 1), maxPendingHint))
		}
		job.Pending = append(job.Pending, *e.task)
		pending[key] = e
		g.pending++
	}
	for key, a := range assumed {
		switch {
		case boundUIDs[a.uid]:
			delete(assumed, key) // the informer has caught up
		case !present[key] && now.Sub(a.at) > assumeTTL:
			delete(assumed, key) // long gone from both sets: deleted
		default:
			if u := usage[a.node]; u != nil {
				u.add(a.requests)
			}
			if a.pod != nil && (allPods || podAffinityOf(a.pod)) {
				snap.Pods = append(snap.Pods, placedPod(a.pod, a.node))
			}
			if g := groups[a.group]; g != nil {
				job := &snap.Jobs[jobs[name{g.pg.Namespace, g.pg.Name}]]
				job.Bound[a.task]++
				core.AddList(job.Allocated, a.requests)
				g.scheduled++
			}
		}
	}

	for i := range snap.Nodes {
		u := usage[snap.Nodes[i].Name]
		u.list[corev1.ResourcePods] = *resource.NewQuantity(u.pods, resource.DecimalSI)
		snap.Nodes[i].Used = u.list
	}
	return &view{snap: snap, groups: groups, pending: pending}
}

// podAffinityOf reports whether a pod has a pod (anti-)affinity term.
func podAffinityOf(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	return a != nil && core.HasPodAffinity(a.PodAffinity, a.PodAntiAffinity)
}

// placedPod is a pod on node as inter-pod affinity sees it.
func placedPod(pod *corev1.Pod, node string) core.PlacedPod {
	p := core.PlacedPod{Namespace: pod.Namespace, Node: node, Labels: pod.Labels}
	if a := pod.Spec.Affinity; a != nil {
		p.PodAffinity, p.PodAntiAffinity = a.PodAffinity, a.PodAntiAffinity
	}
	return p
}

// assumeTTL is how long a pod this scheduler bound, which neither pod
// informer shows any more, still counts as on its node: the time a pod
// takes to move from the unbound set to the bound one is far shorter.
const assumeTTL = 30 * time.Second

// jobOf is the Job of a PodGroup, with no pods yet.
func jobOf(pg *vcv1beta1.PodGroup, priorities *priorities) core.Job {
	queue := pg.Spec.Queue
	if queue == "" {
		queue = "default"
	}
	phase := pg.Status.Phase
	if phase == vcv1beta1.PodGroupCompleted {
		// Completed is Running with every placed pod finished; placing a
		// replacement pod must still be possible, as Volcano recomputes the
		// phase from the pods every session.
		phase = vcv1beta1.PodGroupRunning
	}
	j := core.Job{
		Namespace: pg.Namespace, Name: pg.Name, Queue: queue,
		Priority:      priorities.of(pg.Spec.PriorityClassName),
		CreationTime:  pg.CreationTimestamp.Time,
		MinMember:     pg.Spec.MinMember,
		MinTaskMember: pg.Spec.MinTaskMember,
		Phase:         phase,
		Bound:         map[string]int32{},
		Allocated:     corev1.ResourceList{},
	}
	if pg.Spec.MinResources != nil {
		j.MinResources = *pg.Spec.MinResources
	}
	return j
}

// countBound counts a bound pod into its job and PodGroup view as Volcano
// counts tasks: a pod being deleted is releasing (neither running nor
// placed); a failed pod is scheduled but not ready.
func countBound(job *core.Job, g *groupView, pod *corev1.Pod, requests corev1.ResourceList) {
	deleting := pod.DeletionTimestamp != nil
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		g.succeeded++
		g.scheduled++
		g.completed++
		job.Bound[pod.Annotations[core.TaskSpecAnnotation]]++
	case corev1.PodFailed:
		g.failed++
		g.scheduled++
		g.completed++
	default:
		if deleting {
			return
		}
		if pod.Status.Phase == corev1.PodRunning {
			g.running++
		}
		g.scheduled++
		job.Bound[pod.Annotations[core.TaskSpecAnnotation]]++
		core.AddList(job.Allocated, requests)
	}
}

// podFinished: the pod holds no resources on its node any more.
func podFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// waiting: an unbound pod the scheduler may place: not finished, not being
// deleted, not held back by scheduling gates.
func waiting(pod *corev1.Pod) bool {
	return !podFinished(pod) && pod.DeletionTimestamp == nil && len(pod.Spec.SchedulingGates) == 0
}

// nodeUsage sums the requests of the pods on one node.
type nodeUsage struct {
	list corev1.ResourceList
	pods int64
}

func (u *nodeUsage) add(requests corev1.ResourceList) {
	core.AddList(u.list, requests)
	u.pods++
}

// priorities values PriorityClasses by name, as Volcano does: a PodGroup
// without a class, or with one that does not exist, gets the global default
// class's value, else 0.
type priorities struct {
	byName map[string]int32
	global int32
}

func newPriorities(in inputs) *priorities {
	p := &priorities{byName: make(map[string]int32, len(in.classes))}
	// Of several global defaults, the lowest named wins, for determinism.
	var globals []string
	for _, pc := range in.classes {
		p.byName[pc.Name] = pc.Value
		if pc.GlobalDefault {
			globals = append(globals, pc.Name)
		}
	}
	if len(globals) > 0 {
		p.global = p.byName[slices.Min(globals)]
	}
	return p
}

func (p *priorities) of(name string) int32 {
	if v, ok := p.byName[name]; ok && name != "" {
		return v
	}
	return p.global
}

// podCache keeps what is derived from a pod (its Task, with its requests)
// across cycles for as long as the informer holds the same object: an
// update replaces the object, so the pointer tells a change.
type podCache struct {
	entries map[types.UID]*podEntry
	cycle   uint64
}

type podEntry struct {
	pod  *corev1.Pod
	task *core.Task
	seen uint64
}

func newPodCache() podCache { return podCache{entries: map[types.UID]*podEntry{}} }

func (c *podCache) startCycle() { c.cycle++ }

func (c *podCache) get(pod *corev1.Pod) *podEntry {
	e := c.entries[pod.UID]
	if e == nil || e.pod != pod {
		t := core.TaskFromPod(pod)
		e = &podEntry{pod: pod, task: &t}
		c.entries[pod.UID] = e
	}
	e.seen = c.cycle
	return e
}

// sweep forgets the pods no cycle looked at this time.
func (c *podCache) sweep() {
	for uid, e := range c.entries {
		if e.seen != c.cycle {
			delete(c.entries, uid)
		}
	}
}

// maxPendingHint bounds the room made ahead for a gang's pending pods; append grows it past
// that for the pods that are really there.
const maxPendingHint = 1024
