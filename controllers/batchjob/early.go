package batchjob

import (
	"context"
	"errors"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/shard"
)

// A gained slot's pods are the last part of its gain to list, and on a large
// cluster they take tens of seconds. A batch/v1 Job of such a slot that has
// work meanwhile (a new Job above all) reads its own pods from the API server
// instead (cache.BatchPodsFromServer), as the Volcano Job controller does.
// Its pods have generated names, so a create made again on a view older than
// what was decided on would not be refused as existing: it would make a pod
// too many. Hence two guards:
//
//   - a Job read early is read from the API server on every reconcile until
//     the cache shows its pods as a read did (cache.BatchCaughtUp); a read
//     that fails then fails the reconcile, which is retried, rather than
//     fall back to the cache;
//   - a create waits for the cache to see it (the expectations), which an
//     early Job meets only once its slot's pods are listed: a Job read early
//     makes its pods once, and waits for the list before it makes more.

// EarlyJobsLimit bounds how many Jobs of slots gained together SlotsEarly
// looks at: each costs a list of its pods from the API server.
const EarlyJobsLimit = 256

// SlotsEarly looks at the new batch/v1 Jobs of slots, just gained, before
// the slots' pods are listed (the cache calls it once only the pods are left
// to list): a Job not started yet has no pods, or few, and its read is
// cheap. A started Job waits for SlotsReady. Jobs made after the gain come
// through their own events and run early as well.
func (c *Controller) SlotsEarly(slots []int) {
	held, n := shard.NewSlotSet(slots), c.cfg.Ownership.Slots()
	looked := 0
	for _, obj := range c.jobInf.GetStore().List() {
		job, ok := obj.(*batchv1.Job)
		if !ok || !managed(job) || job.Status.StartTime != nil || job.DeletionTimestamp != nil ||
			(job.Spec.Suspend != nil && *job.Spec.Suspend) {
			continue
		}
		key := toolscache.MetaObjectToName(job).String()
		if !held.HasKey(key, n) {
			continue
		}
		if looked++; looked > EarlyJobsLimit {
			c.Log.Debug("more new batch jobs on gained slots than are looked at before their pods are listed", "slots", len(slots), "limit", EarlyJobsLimit)
			break
		}
		c.Disp.Enqueue(key, request{})
	}
}

// early returns the Job at key's pods read from the API server, with the
// Job they were read for, when its slot is held and only the slot's pods are
// still being listed (cache.PodsListing); a nil Job leaves it to SlotsReady:
// some other part of the slot is still being listed, the Job is gone or not
// ringfire's, it has more pods than are read early, or the read failed.
func (c *Controller) early(ctx context.Context, key string, slots int) ([]*corev1.Pod, *batchv1.Job) {
	if !c.cfg.Cache.PodsListing(key, slots) {
		return nil, nil
	}
	job, err := c.jobByKey(key)
	if err != nil {
		return nil, nil
	}
	if job == nil || !managed(job) {
		c.cfg.Cache.BatchCaughtUp(key, nil, nil) // read early before it went, maybe
		return nil, nil
	}
	pods, err := c.cfg.Cache.BatchPodsFromServer(ctx, key, job)
	if err != nil {
		c.Log.Debug("batch job left to its slot's list", "job", key, "error", err)
		return nil, nil
	}
	return pods, job
}

// caughtUp returns the Job at key's pods read from the API server, with the
// Job they were read for, while the cache may still be older than an early
// read of them (cache.BatchReadEarly); a nil Job once the cache shows the
// pods as the API server does, or the Job is gone: the cache's view is the
// one to read then. A read that fails is an error: the reconcile is retried,
// and the cache, maybe older, is not used meanwhile.
//
// A Job that has grown past what is read early since it was read is read
// from the cache from then on: its slot is listed, and every create or
// delete made for it before the list was in is still expected
// (cache.Expectations.Hold), so none is made again on the cache's view.
func (c *Controller) caughtUp(ctx context.Context, key string) ([]*corev1.Pod, *batchv1.Job, error) {
	job, err := c.jobByKey(key)
	if err != nil {
		return nil, nil, err
	}
	if job == nil || !managed(job) {
		c.cfg.Cache.BatchCaughtUp(key, nil, nil)
		return nil, nil, nil
	}
	read, err := c.cfg.Cache.BatchPodsFromServer(ctx, key, job)
	switch {
	case errors.Is(err, cache.ErrTooManyPods):
		c.Log.Debug("batch job read early has grown past what is read early; reading it from the cache", "job", key, "error", err)
		c.cfg.Cache.BatchCaughtUp(key, nil, nil)
		return nil, nil, nil
	case err != nil:
		return nil, nil, err
	case c.cfg.Cache.BatchCaughtUp(key, job, read):
		return nil, nil, nil
	}
	return read, job, nil
}
