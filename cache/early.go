package cache

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/shard"
)

// A gained slot's pods are what a failover waits for: they come in one
// stream, at a rate the API server sets (about 700–1,700 pods a second here),
// and a gain of a third of a ring of 100,000 pods takes tens of seconds. Every
// other part of a gain (the Jobs, filled from memory; the PodGroups; the
// rarely-used kinds) is ready in a second or two. A Job of such a slot that
// has work meanwhile (a new Job, a PodGroup admitted, a Command) need not wait
// for its slot's pods: its own pods are one small list away. PodsListing
// tells that moment, and JobInfoFromServer reads the Job's pods from the API
// server with a consistent list, a view as complete and as fresh as the
// slot's list would give. The slot still becomes ready (SlotsReady) as
// before, and every Job of it is looked at then.

// EarlyPodsLimit is the most pods JobInfoFromServer reads for one Job: a Job
// with more waits for its slot's list, as every Job did before (a read that
// large is the slot's list's work, and a user's replica count must not make
// one reconcile's memory unbounded).
const EarlyPodsLimit = 2000

// ErrTooManyPods is JobInfoFromServer's answer for a Job of more than
// EarlyPodsLimit pods.
var ErrTooManyPods = errors.New("too many pods to read for one job")

// PodsListing reports whether the slot of key is held and every part of its
// gain is ready but its pods: the Job is in full, its PodGroups and the
// objects its plugins own are in the cache, the adoption sweep is done, and
// the slot's pods are still being listed.
func (c *Cache) PodsListing(key string, slots int) bool {
	if c.cfg.Slots == nil {
		return false
	}
	held, left := c.gainOf(key, slots)
	return held && left == 1<<podsBit
}

// podsBit is the bit of unlisted that stands for the pods.
var podsBit = func() int {
	for i, r := range Owned {
		if r == Pods {
			return i
		}
	}
	panic("cache: Pods is not among Owned")
}()

// JobInfoFromServer is JobInfo with the Job's pods read from the API server
// (a consistent list of the pods labelled with the Job's name in its
// namespace, a page at a time) rather than from the cache: for a Job whose
// slot's pods are still being listed (PodsListing). The Job and its
// PodGroup are the cache's. A pod the Job controls that has lost its
// volcano.sh/job-name label is not read; the slot's list, once in, has it.
// It returns nil when the Job does not exist, and ErrTooManyPods for a Job
// of more than EarlyPodsLimit pods: one whose tasks ask for more, without a
// read, or one a read of this gain found to have more.
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
	ek := earlyKey{key: key}
	selector := labels.Set{batch.JobNameKey: job.Name}.AsSelector().String()
	var pods []any
	var info *JobInfo
	err = c.readEarly(ctx, ek, job.Namespace, selector, func(p *corev1.Pod) {
		if p := controlledPod(key, p); p != nil {
			pods = append(pods, p)
		}
	}, func() (err error) {
		info, err = c.jobInfo(key, job, pods)
		return err
	})
	if err != nil {
		return nil, err
	}
	return info, nil
}

// BatchPodsFromServer reads from the API server the pods of job, the
// batch/v1 Job at key, for a Job whose slot's pods are still being listed
// (PodsListing): a consistent list of the pods in its namespace that its
// selector matches and that carry its slot's label, a page at a time, of
// which it keeps those whose controller is the Job (by UID), sorted by name
// as the cache gives them: the set of the Job's pods that BatchCaughtUp
// looks for in the cache, so that the two views can converge. It returns ErrTooManyPods for a Job that asks for more
// than EarlyPodsLimit pods at once, and for one whose selector a read of
// this gain found to match more.
//
// The reads take turns with JobInfoFromServer's (EarlyReadsLimit).
func (c *Cache) BatchPodsFromServer(ctx context.Context, key string, job *batchv1.Job) ([]*corev1.Pod, error) {
	if p := job.Spec.Parallelism; p != nil && *p > EarlyPodsLimit {
		return nil, fmt.Errorf("batch job %s: %w (its parallelism is %d)", key, ErrTooManyPods, *p)
	}
	selector, err := c.batchSelector(key, job)
	if err != nil {
		return nil, err
	}
	var pods []*corev1.Pod
	err = c.readEarly(ctx, earlyKey{batch: true, key: key}, job.Namespace, selector.String(), func(p *corev1.Pod) {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == job.UID {
			pods = append(pods, p)
		}
	}, nil)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods, nil
}

// batchSelector is the Job's selector and its slot's label.
func (c *Cache) batchSelector(key string, job *batchv1.Job) (labels.Selector, error) {
	if job.Spec.Selector == nil {
		return nil, fmt.Errorf("batch job %s has no selector", key)
	}
	selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("batch job %s: its selector: %w", key, err)
	}
	slot, err := labels.NewRequirement(shard.SlotLabel, selection.Equals, []string{strconv.Itoa(shard.SlotOf(key, c.slotCount()))})
	if err != nil {
		return nil, fmt.Errorf("batch job %s: %w", key, err)
	}
	return selector.Add(*slot), nil
}

// earlyKey names a Job read early: a Volcano Job and a batch/v1 Job may
// share a namespace and a name.
type earlyKey struct {
	batch bool
	key   string
}

// readEarly lists the pods selector matches in namespace for the Job ek, a
// page at a time, passing each to keep (without its managedFields), and
// then, if check (when set) returns no error, remembers the Job as read
// early (ReadEarly) unless its slot was lost, or lost and gained again,
// meanwhile. A list of more than EarlyPodsLimit pods stops there with
// ErrTooManyPods, and the Job is remembered as too large to read again until
// its slot is ready or lost. It waits for its turn (EarlyReadsLimit) and
// reads within earlyReadTimeout.
func (c *Cache) readEarly(ctx context.Context, ek earlyKey, namespace, selector string, keep func(*corev1.Pod), check func() error) error {
	slot := shard.SlotOf(ek.key, c.slotCount())
	c.mu.Lock()
	_, large := c.tooLarge[ek]
	gen := c.gen[slot] // what the read learns is of this gain of the slot only
	c.mu.Unlock()
	if large {
		return fmt.Errorf("job %s: %w (found so by a read since its slot was gained)", ek.key, ErrTooManyPods)
	}
	ctx, cancel := context.WithTimeout(ctx, earlyReadTimeout)
	defer cancel()
	select {
	case c.earlyReads <- struct{}{}:
		defer func() { <-c.earlyReads }()
	case <-ctx.Done():
		return fmt.Errorf("pods of job %s: waiting for a turn to read: %w", ek.key, ctx.Err())
	}
	// Pages sized as a slot's list's are (pages.go): the selector is a user's, and so may be
	// the pods it matches.
	pages := &pager{first: firstPods}
	opts := metav1.ListOptions{LabelSelector: selector}
	read := 0
	for {
		opts.Limit = pages.limit(opts.Continue != "")
		list, err := c.cfg.Kube.CoreV1().Pods(namespace).List(ctx, opts)
		if err != nil {
			return fmt.Errorf("pods of job %s: %w", ek.key, err)
		}
		// Every pod listed counts, the Job's or not: a selector a user wrote
		// may match far more pods than the Job controls.
		if read += len(list.Items); read > EarlyPodsLimit {
			c.mu.Lock()
			if _, listing := c.unlisted[slot]; listing && c.gen[slot] == gen {
				c.tooLarge[ek] = slot
			}
			c.mu.Unlock()
			return fmt.Errorf("job %s: %w (more than %d)", ek.key, ErrTooManyPods, EarlyPodsLimit)
		}
		var bytes int64
		for i := range list.Items {
			p := &list.Items[i]
			bytes += int64(approxBytes(p))
			// Cut as the cache cuts it: the reconcile reads these in its place.
			if kept, _, _ := c.owned[Pods].keep(p); kept != nil {
				if pod, ok := kept.(*corev1.Pod); ok {
					keep(pod)
				}
			}
		}
		pages.landed(opts.Limit, len(list.Items), bytes)
		if opts.Continue = list.Continue; opts.Continue == "" {
			break
		}
	}
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	c.mu.Lock()
	if c.held[slot] && c.gen[slot] == gen { // not lost (nor lost and gained again) meanwhile
		c.early[ek] = slot
	}
	c.mu.Unlock()
	return nil
}

// earlyReadTimeout bounds one early read (JobInfoFromServer,
// BatchPodsFromServer): a worker waits no longer for it, and the Job is left
// to its slot's list.
const earlyReadTimeout = 10 * time.Second

// EarlyReadsLimit is how many early reads (JobInfoFromServer and
// BatchPodsFromServer together) run at once in a replica: a gain's early
// Jobs are many small lists, and they come while the API server also
// streams the gained slots' pods; a worker whose read waits for a turn waits
// in the read's own time bound. The default 8 workers of the Job controller
// alone never meet the limit; it keeps a replica run with many more workers,
// or a gain with work for both controllers, from turning into as many lists
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

// ReadEarly reports whether the Job at key had its pods read from the API
// server (JobInfoFromServer) and the cache has not been seen to show them as
// that read did (CaughtUp). The slot's list of pods is a snapshot taken about
// when the early reads start, which may be older than a read, and its watch
// replays what came since: until it has, the cache may show a pod the read
// saw deleted, or in an older state, and a reconcile on it would undo what
// was decided on the read (a Running phase taken back, a create issued
// again).
func (c *Cache) ReadEarly(key string) bool { return c.readEarlyOf(earlyKey{key: key}) }

// BatchReadEarly is ReadEarly for the batch/v1 Job at key
// (BatchPodsFromServer, BatchCaughtUp). Its pods have generated names: a
// create issued again on an older view would not be refused, it would make
// one pod too many.
func (c *Cache) BatchReadEarly(key string) bool {
	return c.readEarlyOf(earlyKey{batch: true, key: key})
}

func (c *Cache) readEarlyOf(ek earlyKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.early[ek]
	return ok
}

// CaughtUp reports whether the cache shows the Job at key's pods as read
// holds them (the same pods, each at the same resourceVersion), and if so
// forgets that the Job was read early. read nil forgets it too: the Job is
// gone, or has grown past what is read early, and the cache is the one view
// left of it.
func (c *Cache) CaughtUp(key string, read *JobInfo) bool {
	if read != nil {
		cached, err := c.JobInfo(key)
		if err != nil || cached == nil || !samePods(cached, read) {
			return false
		}
	}
	c.forgetEarly(earlyKey{key: key})
	return true
}

// BatchCaughtUp is CaughtUp for the batch/v1 Job job at key, with read its
// pods as BatchPodsFromServer gave them: the cache's pods of the Job that
// such a read would give (its selector and its slot's label match, and its
// controller reference names it by UID) are compared. job nil forgets that
// the Job was read early.
func (c *Cache) BatchCaughtUp(key string, job *batchv1.Job, read []*corev1.Pod) bool {
	if job != nil {
		selector, err := c.batchSelector(key, job)
		if err != nil {
			return false
		}
		cached, err := c.owned[Pods].Indexer().ByIndex(ByBatchJob, key)
		if err != nil {
			return false
		}
		want := make(map[string]string, len(read))
		for _, p := range read {
			want[p.Name] = p.ResourceVersion
		}
		have := make(map[string]string, len(want))
		for _, obj := range cached {
			p, ok := obj.(*corev1.Pod)
			if !ok || !selector.Matches(labels.Set(p.Labels)) {
				continue
			}
			if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == job.UID {
				have[p.Name] = p.ResourceVersion
			}
		}
		if !maps.Equal(want, have) {
			return false
		}
	}
	c.forgetEarly(earlyKey{batch: true, key: key})
	return true
}

func (c *Cache) forgetEarly(ek earlyKey) {
	c.mu.Lock()
	delete(c.early, ek)
	delete(c.tooLarge, ek)
	c.mu.Unlock()
}

// forgetTooLargeLocked forgets the Jobs of slots found too large to read
// early; c.mu is held.
func (c *Cache) forgetTooLargeLocked(slots shard.SlotSet) {
	for ek, n := range c.tooLarge {
		if slots[n] {
			delete(c.tooLarge, ek)
		}
	}
}

// samePods reports whether a and b hold the same pods, owned and foreign, at
// the same resourceVersions.
func samePods(a, b *JobInfo) bool {
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
	return maps.Equal(versions(a), versions(b))
}

// controlledPod returns obj as a pod the ByJob index files under key (its
// controller is the Volcano Job of that name), or nil.
func controlledPod(key string, obj any) *corev1.Pod {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	if keys, _ := indexByJob(pod); len(keys) == 0 || keys[0] != key {
		return nil
	}
	return pod
}
