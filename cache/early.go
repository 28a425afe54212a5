package cache

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/shard"
)

// A gained slot's pods are what a failover waits for: they come in one
// stream, at a rate the API server sets (about 700–1,700 pods a second here),
// and a gain of a third of a ring of 100,000 pods takes tens of seconds. Its
// PodGroups (custom resources, sent as JSON) come second: 1–5 s at that size.
// Every other part of a gain (the Jobs, filled from memory; the rarely-used
// kinds) is ready in well under a second. A Job of such a slot that has work
// meanwhile (a new Job, a PodGroup admitted, a Command) need not wait for its
// slot's pods and PodGroups: its own are two small lists away.
// ReadableEarly tells that moment, and JobInfoFromServer reads the Job's pods
// and PodGroup from the API server with consistent lists, a view as complete
// and as fresh as the slot's lists would give. The slot still becomes ready
// (SlotsReady) as before, and every Job of it is looked at then.

// EarlyPodsLimit is the most pods JobInfoFromServer reads for one Job, and
// the most PodGroups it lists for one: a Job with more waits for its slot's
// lists, as every Job did before (a read that large is the slot's list's
// work, and a user's replica or Job count must not make one reconcile's
// memory unbounded).
const EarlyPodsLimit = 2000

// ErrTooManyPods is JobInfoFromServer's answer for a Job of more than
// EarlyPodsLimit pods, or for one without a PodGroup of its own name whose
// slot has more than EarlyPodsLimit PodGroups in its namespace.
var ErrTooManyPods = errors.New("too many objects to read for one job")

// PodsListing reports whether the slot of key is held and every part of its
// gain is ready but its pods: the Job is in full, its PodGroups and the
// objects its plugins own are in the cache, the adoption sweep is done, and
// the slot's pods are still being listed. The adds of a list of pods or
// PodGroups are the slot's, left to SlotsReady; a PodGroup that enters the
// cache of a slot for which only pods are left is a new one.
func (c *Cache) PodsListing(key string, slots int) bool {
	if c.cfg.Slots == nil {
		return false
	}
	held, left := c.gainOf(key, slots)
	return held && left == 1<<podsBit
}

// ReadableEarly reports whether the slot of key is held and every part of
// its gain is ready but its pods, its PodGroups or both, which are still
// being listed: the Job's own can be read from the API server
// (JobInfoFromServer).
func (c *Cache) ReadableEarly(key string, slots int) bool {
	if c.cfg.Slots == nil {
		return false
	}
	held, left := c.gainOf(key, slots)
	return held && left != 0 && left&^earlyParts == 0
}

// PodsListed reports whether the slot of key is held and its pods are in,
// with nothing but its PodGroups (if anything) left to list: a pod that
// enters the cache then is a new one, not the list's.
func (c *Cache) PodsListed(key string, slots int) bool {
	if c.cfg.Slots == nil {
		return true
	}
	held, left := c.gainOf(key, slots)
	return held && left&(1<<podsBit) == 0 && left&^earlyParts == 0
}

// PodGroupsListing reports whether the slot of key is held and its
// PodGroups are still being listed: the cache tells no change of them yet.
func (c *Cache) PodGroupsListing(key string, slots int) bool {
	if c.cfg.Slots == nil {
		return false
	}
	held, left := c.gainOf(key, slots)
	return held && left&(1<<podGroupsBit) != 0
}

// GainedAgo is how long ago the slot of key was gained, while it is not ready
// yet; 0 once it is, or when it is not held.
func (c *Cache) GainedAgo(key string, slots int) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.gainedAt[shard.SlotOf(key, slots)]; g != nil {
		return time.Since(g.at)
	}
	return 0
}

// podsBit and podGroupsBit are the bits of unlisted that stand for the pods
// and the PodGroups; earlyParts are both, the parts an early read stands in
// for.
var (
	podsBit      = ownedBit(Pods)
	podGroupsBit = ownedBit(PodGroups)
	earlyParts   = uint32(1<<podsBit | 1<<podGroupsBit)
)

func ownedBit(r Resource) int {
	i := slices.Index(Owned, r)
	if i < 0 {
		panic("cache: " + string(r) + " is not among Owned")
	}
	return i
}

// JobInfoFromServer is JobInfo with the Job's pods and PodGroup read from the
// API server rather than from the cache: for a Job whose slot's pods or
// PodGroups are still being listed (ReadableEarly). The pods are a consistent
// list of those labelled with the Job's name in its namespace, a page at a
// time. The PodGroup is a list by the name the Job's controller gives it, or,
// when there is none (a Job that has none yet, or one vc-controller-manager
// named otherwise), a consistent list of the PodGroups labelled with the
// Job's slot in its namespace (every PodGroup of a Job carries its slot:
// ringfire's from their create, vc-controller-manager's from the adoption
// sweep, done by then). The Job is the cache's. A pod the Job controls that
// has lost its volcano.sh/job-name label is not read; the slot's list, once
// in, has it.
// It returns nil when the Job does not exist, and ErrTooManyPods for a Job
// of more than EarlyPodsLimit pods (one whose tasks ask for more, without a
// read, or one a read of this gain found to have more), or without a
// PodGroup of its own name in a slot of more than EarlyPodsLimit PodGroups
// in its namespace.
//
// At most EarlyReadsLimit reads run at once in a replica; a read waits for
// its turn within the same earlyReadTimeout.
func (c *Cache) JobInfoFromServer(ctx context.Context, key string) (*JobInfo, error) {
	job, ok, err := c.Job(key)
	if err != nil || !ok {
		return nil, err
	}
	if n := askedPods(job); n > EarlyPodsLimit {
		return nil, fmt.Errorf("job %s: %w (its tasks ask for %d)", key, ErrTooManyPods, n)
	}
	slot := shard.SlotOf(key, c.slotCount())
	c.mu.Lock()
	_, large := c.tooLarge[key]
	gen := c.gen[slot] // what the read learns is of this gain of the slot only
	c.mu.Unlock()
	if large {
		return nil, fmt.Errorf("job %s: %w (found so by a read since its slot was gained)", key, ErrTooManyPods)
	}
	ctx, cancel := context.WithTimeout(ctx, earlyReadTimeout)
	defer cancel()
	select {
	case c.earlyReads <- struct{}{}:
		defer func() { <-c.earlyReads }()
	case <-ctx.Done():
		return nil, fmt.Errorf("pods of job %s: waiting for a turn to read: %w", key, ctx.Err())
	}
	tooLarge := func(what string) error {
		c.mu.Lock()
		if _, listing := c.unlisted[slot]; listing && c.gen[slot] == gen {
			c.tooLarge[key] = slot
		}
		c.mu.Unlock()
		return fmt.Errorf("job %s: %w (more than %d %s)", key, ErrTooManyPods, EarlyPodsLimit, what)
	}
	var pods []any
	opts := metav1.ListOptions{LabelSelector: labels.Set{batch.JobNameKey: job.Name}.AsSelector().String(), Limit: 500}
	for {
		list, err := c.cfg.Kube.CoreV1().Pods(job.Namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("pods of job %s: %w", key, err)
		}
		for i := range list.Items {
			if p := controlledPod(key, &list.Items[i]); p != nil {
				p.ManagedFields = nil
				pods = append(pods, p)
			}
		}
		if len(pods) > EarlyPodsLimit {
			return nil, tooLarge("pods")
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			break
		}
	}
	pgs, err := c.podGroupsFromServer(ctx, key, job, slot)
	if errors.Is(err, ErrTooManyPods) {
		return nil, tooLarge("podgroups of its slot in its namespace, none of its own name")
	}
	if err != nil {
		return nil, err
	}
	info := jobInfo(job, pods, pgs)
	c.mu.Lock()
	if c.held[slot] && c.gen[slot] == gen { // not lost (nor lost and gained again) meanwhile
		c.early[key] = slot
	}
	c.mu.Unlock()
	return info, nil
}

// PodGroupFromServer reads from the API server the PodGroup of the Job at key
// of the name the Job's controller gives it (a consistent list by name), or
// nil if there is none, or no such Job: a cheap look at a PodGroup's phase
// while the slot's PodGroups are listed.
func (c *Cache) PodGroupFromServer(ctx context.Context, key string) (*scheduling.PodGroup, error) {
	job, ok, err := c.Job(key)
	if err != nil || !ok {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, earlyReadTimeout)
	defer cancel()
	return c.ownPodGroupFromServer(ctx, key, job)
}

// ownPodGroupFromServer is PodGroupFromServer of job, at key.
func (c *Cache) ownPodGroupFromServer(ctx context.Context, key string, job *batch.Job) (*scheduling.PodGroup, error) {
	name := job.Name + "-" + string(job.UID)
	// A list by name rather than a get: the same consistent read, on the verb the role grants.
	own, err := c.cfg.Volcano.SchedulingV1beta1().PodGroups(job.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("podgroup of job %s: %w", key, err)
	}
	for i := range own.Items {
		if pg := &own.Items[i]; pg.Name == name && jobKeyIs(pg, key) {
			pg.ManagedFields = nil
			return pg, nil
		}
	}
	return nil, nil
}

// podGroupsFromServer reads the PodGroups of the Job at key from the API
// server: the one of the name the Job's controller gives it, or, if
// there is none (a Job that has none yet, or one vc-controller-manager made
// under an older name), those of its slot in its namespace that it controls
// (a consistent list, at most EarlyPodsLimit of them).
func (c *Cache) podGroupsFromServer(ctx context.Context, key string, job *batch.Job, slot int) ([]any, error) {
	if own, err := c.ownPodGroupFromServer(ctx, key, job); err != nil || own != nil {
		if own != nil {
			return []any{own}, nil
		}
		return nil, err
	}
	pgs := c.cfg.Volcano.SchedulingV1beta1().PodGroups(job.Namespace)
	var out []any
	opts := metav1.ListOptions{LabelSelector: labels.Set{shard.SlotLabel: strconv.Itoa(slot)}.AsSelector().String(), Limit: 500}
	for seen := 0; ; {
		list, err := pgs.List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("podgroups of job %s: %w", key, err)
		}
		for i := range list.Items {
			if pg := &list.Items[i]; jobKeyIs(pg, key) {
				pg.ManagedFields = nil
				out = append(out, pg)
			}
		}
		if seen += len(list.Items); seen > EarlyPodsLimit {
			return nil, ErrTooManyPods
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}

// earlyReadTimeout bounds one JobInfoFromServer: a worker waits no longer for
// it, and the Job is left to its slot's list.
const earlyReadTimeout = 10 * time.Second

// EarlyReadsLimit is how many JobInfoFromServer reads run at once in a
// replica: a gain's early Jobs are many small lists, and they come while the
// API server also streams the gained slots' pods; a worker whose read waits
// for a turn waits in the read's own time bound. With the default 8 workers
// of the Job controller, its one caller, the limit never binds; it keeps a
// replica run with many more workers from turning a gain into as many lists
// at once.
const EarlyReadsLimit = 8

// askedPods is how many pods the Job's tasks ask for; an int64 sum of int32
// replica counts cannot overflow, whatever a user wrote.
func askedPods(job *batch.Job) int64 {
	var n int64
	for _, t := range job.Spec.Tasks {
		if t.Replicas > 0 {
			n += int64(t.Replicas)
		}
	}
	return n
}

// ReadEarly reports whether the Job at key had its pods and PodGroup read
// from the API server (JobInfoFromServer) and the cache has not been seen to
// show them as that read did (CaughtUp). The slot's lists are snapshots
// taken when the slot was gained, older than that read, and their watches
// replay what came since: until they have, the cache may show a pod the read
// saw deleted, a PodGroup not admitted yet, or no PodGroup at all, and a
// reconcile on it would undo what was decided on the read (a Running phase
// taken back, a create issued again).
func (c *Cache) ReadEarly(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.early[key]
	return ok
}

// CaughtUp reports whether the cache shows the Job at key's pods and
// PodGroup as read holds them (the same objects, each at the same
// resourceVersion), and if so
// forgets that the Job was read early. read nil forgets it too: the Job is
// gone, or has grown past what is read early, and the cache is the one view
// left of it.
func (c *Cache) CaughtUp(key string, read *JobInfo) bool {
	if read != nil {
		cached, err := c.JobInfo(key)
		if err != nil || cached == nil || !sameView(cached, read) {
			return false
		}
	}
	c.mu.Lock()
	delete(c.early, key)
	delete(c.tooLarge, key)
	c.mu.Unlock()
	return true
}

// forgetTooLargeLocked forgets the Jobs of slots found too large to read
// early; c.mu is held.
func (c *Cache) forgetTooLargeLocked(slots shard.SlotSet) {
	for key, n := range c.tooLarge {
		if slots[n] {
			delete(c.tooLarge, key)
		}
	}
}

// sameView reports whether a and b hold the same pods, owned and foreign,
// and the same PodGroup, at the same resourceVersions.
func sameView(a, b *JobInfo) bool {
	versions := func(info *JobInfo) map[string]string {
		v := map[string]string{}
		for _, byName := range info.Pods {
			for name, p := range byName {
				v[name] = p.ResourceVersion
			}
		}
		for name, p := range info.Foreign {
			v[name] = p.ResourceVersion
		}
		return v
	}
	pg := func(info *JobInfo) [2]string {
		if info.PodGroup == nil {
			return [2]string{}
		}
		return [2]string{info.PodGroup.Name, info.PodGroup.ResourceVersion}
	}
	return maps.Equal(versions(a), versions(b)) && pg(a) == pg(b)
}

// jobKeyIs reports whether the ByJob index files obj under key (its
// controller is the Volcano Job of that name).
func jobKeyIs(obj any, key string) bool {
	keys, _ := indexByJob(obj)
	return len(keys) > 0 && keys[0] == key
}

// controlledPod returns obj as a pod the ByJob index files under key (its
// controller is the Volcano Job of that name), or nil.
func controlledPod(key string, obj any) *corev1.Pod {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	if !jobKeyIs(pod, key) {
		return nil
	}
	return pod
}
