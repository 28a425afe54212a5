package cache

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
	selector := labels.Set{batch.JobNameKey: job.Name}.AsSelector().String()
	opts := metav1.ListOptions{LabelSelector: selector, Limit: 500}
	var pods []any
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
			c.mu.Lock()
			if _, listing := c.unlisted[slot]; listing && c.gen[slot] == gen {
				c.tooLarge[key] = slot
			}
			c.mu.Unlock()
			return nil, fmt.Errorf("job %s: %w (more than %d)", key, ErrTooManyPods, EarlyPodsLimit)
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			break
		}
	}
	info, err := c.jobInfo(key, job, pods)
	if err == nil {
		c.mu.Lock()
		if c.held[slot] && c.gen[slot] == gen { // not lost (nor lost and gained again) meanwhile
			c.early[key] = slot
		}
		c.mu.Unlock()
	}
	return info, err
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

// ReadEarly reports whether the Job at key had its pods read from the API
// server (JobInfoFromServer) and the cache has not been seen to show them as
// that read did (CaughtUp). The slot's list of pods is a snapshot taken about
// when the early reads start, which may be older than a read, and its watch
// replays what came since: until it has, the cache may show a pod the read
// saw deleted, or in an older state, and a reconcile on it would undo what
// was decided on the read (a Running phase taken back, a create issued
// again).
func (c *Cache) ReadEarly(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.early[key]
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
