package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/shard"
)

// ErrSummaryOnly is returned for a Job of which the cache holds only a
// summary: its slot is not held here, or was gained and not listed yet.
var ErrSummaryOnly = errors.New("only a summary of the job is cached")

// lastApplied is kubectl's copy of the whole object, dropped from summaries.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Jobs is the replica's view of the cluster's Volcano Jobs. Jobs carry no
// slot label (labelling them would cost a write each), so every replica
// watches them all; it keeps in full only those of the slots it holds, and of
// the others a summary: the metadata as a stub keeps it (cutMeta: identity,
// controller, deletion, the labels and annotations ringfire reads), and
// status.state, which is all the CronJob controller (it finds a CronJob's
// Jobs in any slot) reads of them; and spec.queue, by which the workload
// metrics count the Jobs of a slot gained and not yet listed in full. A
// summary is at most SummaryBytes, whatever its Job's labels and annotations.
//
// Beside each summary the whole Job is kept packed (packed.go): when slots
// are gained, the summaries of their Jobs are replaced with the Jobs
// unpacked, from memory (a consistent list of every Job stands in for any
// that could not be packed); when slots are lost, their Jobs are cut back to
// summaries and packed. Every write to the index, the reflector's and these,
// goes through one lock, under which handlers run: they must not block.
//
// A Job is packed once it has gone packDelay without a change, not on every
// change: a Job's first seconds are a burst of status writes (its PodGroup,
// its pods pending, running, done), and every replica that does not hold it
// would otherwise encode and deflate each version, only to keep the last.
// Until then its whole Job is kept as it came (unpacked), which a gain takes
// as it is; at most maxUnpacked of them, and maxUnpackedBytes of what their
// writers made large (jobBytes), past which Jobs are packed at once. A Job
// whose packing is larger than maxPacked is not kept packed: a gain of its
// slot reads it from the API server.
type Jobs struct {
	vc     vcclient.Interface
	slots  func() int // the ring's slot count; nil: every Job in full
	log    hclog.Logger
	filled func(slots []int)

	indexer  toolscache.Indexer
	handlers []toolscache.ResourceEventHandler // fixed once Run starts

	mu            sync.Mutex             // every index write, and what follows
	held          map[int]bool           // slots whose Jobs are kept in full
	summary       map[string]packed      // keys held as summaries, and their Jobs packed (nil: in unpacked, or could not be packed)
	unpacked      map[string]unpackedJob // summaries whose whole Job is not packed yet
	unpackedBytes int                    // jobBytes of the unpacked Jobs
	packed        int                    // bytes of the packed Jobs
	count         int                    // Jobs in the index, full and summaries
	listed        chan struct{}          // closed by the first list (Replace), under mu

	packDelay time.Duration // how long a summary's Job goes unchanged before it is packed; 0: at once
	packMu    sync.Mutex    // the packer's; taken after mu when both are
	packer    packer        // packs the summaries' Jobs
}

// unpackedJob is the whole Job of a summary, not packed yet, and when it came.
type unpackedJob struct {
	job   *batch.Job
	at    time.Time
	bytes int // jobBytes
}

// packDelay is how long a Job of a slot not held goes without a change
// before it is packed; maxUnpacked bounds the whole Jobs kept meanwhile (a
// replica's first list, or a loss of many slots, packs past it at once). A
// count, not bytes: a Job's size is its writer's, up to the API server's
// limit, so the bound is small.
const (
	packDelay        = 2 * time.Second
	maxUnpacked      = 256
	maxUnpackedBytes = 32 << 20
)

// maxPacked bounds a packed Job: one of ordinary size packs to 500 bytes to
// a few KiB (TestResidentJobsMemoryPerSlot); one that packs to more is a
// writer's choice that every replica would pay, so it is read when its slot
// is gained instead (fill).
const maxPacked = 64 << 10

// SummaryBytes bounds the JSON of a Job's summary: a stub's metadata
// (StubBytes), the queue's name and status.state with its reason and message,
// which ringfire writes. A JobFlow's Job adds its task counts, one entry a
// task.
const SummaryBytes = StubBytes + 2<<10

// fillReads is the most Jobs a gain reads one by one (those it has no packed
// copy of); past it, it lists every Job.
const fillReads = 64

func newJobs(vc vcclient.Interface, slots func() int, log hclog.Logger, filled func([]int)) *Jobs {
	return &Jobs{
		vc: vc, slots: slots, log: log.Named("jobs"), filled: filled,
		indexer: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{}),
		held:    map[int]bool{}, summary: map[string]packed{}, unpacked: map[string]unpackedJob{},
		listed: make(chan struct{}), packDelay: packDelay,
	}
}

// AddEventHandler adds a receiver of the Jobs' events, run under the index's
// lock: it must not block. Add handlers before the cache starts. The
// registration returned is nil.
func (j *Jobs) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	j.handlers = append(j.handlers, h)
	return nil, nil
}

// AddIndexers adds indexes over the Jobs (full and summaries alike).
func (j *Jobs) AddIndexers(ix toolscache.Indexers) error { return j.indexer.AddIndexers(ix) }

// GetIndexer is the index of the Jobs, full and summaries. Read only.
func (j *Jobs) GetIndexer() toolscache.Indexer { return j.indexer }

// HasSynced reports whether the first list of Jobs has landed.
func (j *Jobs) HasSynced() bool {
	select {
	case <-j.listed:
		return true
	default:
		return false
	}
}

// Get returns the Job at key in full. ok is false when no such Job exists;
// ErrSummaryOnly when only its summary is held.
func (j *Jobs) Get(key string) (*batch.Job, bool, error) {
	j.mu.Lock()
	_, summary := j.summary[key]
	j.mu.Unlock()
	obj, ok, err := j.indexer.GetByKey(key)
	if err != nil || !ok {
		return nil, false, err
	}
	if summary {
		return nil, false, fmt.Errorf("job %s: %w", key, ErrSummaryOnly)
	}
	return obj.(*batch.Job), true, nil
}

// uid returns the UID of the Job at key, in full or summary.
func (j *Jobs) uid(key string) (types.UID, bool) {
	obj, ok, err := j.indexer.GetByKey(key)
	if err != nil || !ok {
		return "", false
	}
	job, ok := obj.(*batch.Job)
	if !ok {
		return "", false
	}
	return job.UID, true
}

// Counts returns how many Jobs are held in full and as summaries.
func (j *Jobs) Counts() (full, summaries int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.count - len(j.summary), len(j.summary)
}

// PackedBytes is the room the packed Jobs behind the summaries take.
func (j *Jobs) PackedBytes() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.packed
}

// Unpacked is how many summaries' Jobs are kept whole, waiting to be packed.
func (j *Jobs) Unpacked() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.unpacked)
}

// setSummaryLocked records key as a summary with its Job packed as p, or, p
// nil and full, as a Job in full; j.mu is held.
func (j *Jobs) setSummaryLocked(key string, p packed, full bool) {
	j.packed -= len(j.summary[key])
	j.unpackedBytes -= j.unpacked[key].bytes
	delete(j.unpacked, key)
	if full {
		delete(j.summary, key)
		return
	}
	j.summary[key] = p
	j.packed += len(p)
}

// keepLocked records key as a summary of job, whole: packed at once if the
// delay is off or maxUnpacked are waiting, else by packDue once it has gone
// the delay unchanged. j.mu is held.
func (j *Jobs) keepLocked(key string, job *batch.Job, now time.Time) {
	size := jobBytes(job)
	if j.packDelay <= 0 || len(j.unpacked) >= maxUnpacked || j.unpackedBytes+size > maxUnpackedBytes {
		j.setSummaryLocked(key, j.pack(key, job), false)
		return
	}
	j.setSummaryLocked(key, nil, false)
	j.unpacked[key] = unpackedJob{job: job, at: now, bytes: size}
	j.unpackedBytes += size
}

// pack packs job, for the summary of key; nil if it cannot be (a gain of its
// slot then lists the Jobs). It may be called with j.mu held or not.
func (j *Jobs) pack(key string, job *batch.Job) packed {
	j.packMu.Lock()
	defer j.packMu.Unlock()
	p, err := j.packer.pack(job)
	if err != nil {
		j.log.Warn("cannot pack a job; a gain of its slot will read it", "job", key, "error", err)
		return nil
	}
	if len(p) > maxPacked {
		j.log.Debug("job too large to keep packed; a gain of its slot will read it", "job", key, "packed", len(p))
		return nil
	}
	return p
}

// packDue packs the summaries' whole Jobs unchanged since before now less
// the delay (every one if all), outside the index's lock: each is stored
// packed only if it is still the one waiting (not changed, held, lost or
// deleted meanwhile). The Jobs of held slots are left to their gain, which
// takes them whole. It returns how many it packed.
func (j *Jobs) packDue(now time.Time, all bool) int {
	type due struct {
		key string
		job *batch.Job
	}
	var todo []due
	j.mu.Lock()
	for key, u := range j.unpacked {
		if (all || now.Sub(u.at) >= j.packDelay) && !j.inFull(key) {
			todo = append(todo, due{key, u.job})
		}
	}
	j.mu.Unlock()
	n := 0
	for _, d := range todo {
		p := j.pack(d.key, d.job)
		j.mu.Lock()
		if u, ok := j.unpacked[d.key]; ok && u.job == d.job && !j.inFull(d.key) {
			j.setSummaryLocked(d.key, p, false)
			n++
		}
		j.mu.Unlock()
	}
	return n
}

// packLoop packs the summaries' Jobs as they come due, until ctx ends.
func (j *Jobs) packLoop(ctx context.Context) {
	if j.packDelay <= 0 || j.slots == nil { // packed at once, or every Job in full
		return
	}
	t := time.NewTicker(j.packDelay / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			j.packDue(now, false)
		}
	}
}

// Summaries is how many Jobs are held as summaries.
func (j *Jobs) Summaries() int {
	_, summaries := j.Counts()
	return summaries
}

// run lists and watches the Jobs until ctx ends.
func (j *Jobs) run(ctx context.Context) {
	lw := newListFirst(
		func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return j.vc.BatchV1alpha1().Jobs("").List(ctx, opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return j.vc.BatchV1alpha1().Jobs("").Watch(ctx, opts)
		},
	)
	r := toolscache.NewReflectorWithOptions(lw, &batch.Job{}, jobsStore{j}, toolscache.ReflectorOptions{Name: "jobs"})
	go j.packLoop(ctx)
	r.RunWithContext(ctx)
}

// inFull reports whether the Job at key is kept in full; j.mu is held.
func (j *Jobs) inFull(key string) bool {
	if j.slots == nil {
		return true
	}
	s := j.slots()
	return s > 0 && j.held[shard.SlotOf(key, s)]
}

// summarize returns the summary of a Job.
func summarize(job *batch.Job) *batch.Job {
	s := &batch.Job{TypeMeta: job.TypeMeta, ObjectMeta: cutMeta(&job.ObjectMeta, nil)}
	s.Spec.Queue = job.Spec.Queue // for the workload metrics of slots gained and not listed yet
	s.Status.State = *job.Status.State.DeepCopy()
	if ref := metav1.GetControllerOf(job); ref != nil && ref.Kind == "JobFlow" {
		// What a JobFlow reports of its Jobs (controllers/flow): the flow is on another
		// slot than most of its Jobs, so its replica sees them as summaries.
		s.Status.RetryCount = job.Status.RetryCount
		s.Status.RunningDuration = job.Status.RunningDuration.DeepCopy()
		if job.Status.TaskStatusCount != nil {
			s.Status.TaskStatusCount = make(map[string]batch.TaskState, len(job.Status.TaskStatusCount))
			for task, st := range job.Status.TaskStatusCount {
				s.Status.TaskStatusCount[task] = *st.DeepCopy()
			}
		}
	}
	return s
}

// storeLocked stores obj, whole or summarized, and tells the handlers; j.mu is held.
func (j *Jobs) storeLocked(obj any) error {
	job, ok := obj.(*batch.Job)
	if !ok {
		return fmt.Errorf("jobs: unexpected %T", obj)
	}
	key, err := toolscache.MetaNamespaceKeyFunc(job)
	if err != nil {
		return err
	}
	StripManagedFields(job) // the reflector's or fill's own copy
	full := j.inFull(key)
	whole := job
	if !full {
		job = summarize(job)
	}
	old, exists, err := j.indexer.GetByKey(key)
	if err != nil {
		return err
	}
	if err := j.indexer.Update(job); err != nil {
		return err
	}
	if !exists {
		j.count++
	}
	if full {
		j.setSummaryLocked(key, nil, true)
	} else {
		j.keepLocked(key, whole, time.Now())
	}
	for _, h := range j.handlers {
		if exists {
			h.OnUpdate(old, job)
		} else {
			h.OnAdd(job, false)
		}
	}
	return nil
}

// deleteLocked drops the Job at key and tells the handlers; j.mu is held.
func (j *Jobs) deleteLocked(key string, final any) error {
	old, exists, err := j.indexer.GetByKey(key)
	if err != nil || !exists {
		return err
	}
	if err := j.indexer.Delete(old); err != nil {
		return err
	}
	j.count--
	j.setSummaryLocked(key, nil, true)
	if final == nil {
		final = old
	}
	for _, h := range j.handlers {
		h.OnDelete(final)
	}
	return nil
}

// hold keeps the Jobs of slots in full from now on.
func (j *Jobs) hold(slots []int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, n := range slots {
		j.held[n] = true
	}
}

// gain replaces the summaries of the Jobs of slots, held since hold, with
// the full Jobs; filled learns the slots once that is done. It tries again
// after an error, until ctx ends.
func (j *Jobs) gain(ctx context.Context, slots []int) {
	go func() {
		backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 8, Cap: 10 * time.Second}
		for {
			err := j.fill(ctx, slots)
			if err == nil {
				j.filled(slots)
				return
			}
			if ctx.Err() != nil {
				return
			}
			d := backoff.Step()
			j.log.Warn("cannot fill the jobs of gained slots; trying again", "slots", len(slots), "in", d, "error", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		}
	}()
}

// kept is what a summary keeps of its Job: packed, or whole until packed.
type kept struct {
	p     packed
	whole *batch.Job
}

// still reports whether a summary that now holds p, and whole unpacked,
// holds what k took: the same packing, or the same whole Job.
func (k kept) still(p packed, whole *batch.Job) bool {
	if k.whole != nil {
		return whole == k.whole
	}
	return whole == nil && p.same(k.p)
}

// errRepacked is a fill that met a summary packed again since it looked: the
// slot was lost and gained again meanwhile. The next try sees the new one.
var errRepacked = errors.New("a summary changed while its slot was being filled")

// fill replaces the summaries of the Jobs of slots with full Jobs, unpacked
// outside the lock. The summaries were stored before the slots were held
// (every write since keeps those Jobs whole), so each packed Job is the
// newest the cache has seen. Summaries that could not be packed are filled
// from a consistent list, made after, so newer than each.
func (j *Jobs) fill(ctx context.Context, slots []int) error {
	if j.slots == nil {
		return nil // every Job is kept in full: there is no summary to replace
	}
	if !j.waitSynced(ctx) {
		return ctx.Err()
	}
	want := shard.NewSlotSet(slots)
	s := j.slots()
	j.mu.Lock()
	todo := map[string]kept{}
	for key, p := range j.summary {
		if want.HasKey(key, s) && j.held[shard.SlotOf(key, s)] {
			todo[key] = kept{p, j.unpacked[key].job}
		}
	}
	j.mu.Unlock()
	if len(todo) == 0 {
		return nil
	}
	start := time.Now()
	unpacked := make(map[string]*batch.Job, len(todo))
	var unread []string // no packed copy to fill them from
	for key, k := range todo {
		if k.whole != nil {
			unpacked[key] = k.whole // not packed yet: taken as it came, no one else's
			continue
		}
		if k.p == nil {
			unread = append(unread, key)
			continue
		}
		job, err := k.p.unpack()
		if err != nil {
			j.log.Warn("cannot unpack a job; reading it", "job", key, "error", err)
			unread = append(unread, key)
			continue
		}
		unpacked[key] = job
	}
	// listed are the Jobs read from the API server, newer than any summary taken
	// before: every Job of the slots when complete, else just the unread ones.
	var listed map[string]*batch.Job
	complete := false
	switch {
	case len(unread) > fillReads:
		var err error
		if listed, err = j.list(ctx, want, s); err != nil {
			return err
		}
		complete = true
	case len(unread) > 0:
		var err error
		if listed, err = j.read(ctx, unread); err != nil {
			return err
		}
	}
	list := listed != nil
	j.mu.Lock()
	defer j.mu.Unlock()
	for key, p := range j.summary {
		if !want.HasKey(key, s) || !j.held[shard.SlotOf(key, s)] {
			continue // another slot's, or lost again meanwhile
		}
		var err error
		_, read := listed[key]
		if job, ok := unpacked[key]; ok && todo[key].still(p, j.unpacked[key].job) {
			err = j.storeLocked(job)
		} else if !complete && !read && !slices.Contains(unread, key) {
			return errRepacked
		} else if job := listed[key]; job != nil {
			err = j.storeLocked(job)
		} else {
			err = j.deleteLocked(key, nil) // gone, and its delete not seen yet
		}
		if err != nil {
			return err
		}
	}
	j.log.Debug("gained slots' jobs filled", "slots", len(slots), "summaries_replaced", len(todo), "listed", list, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// read reads the Jobs at keys one by one; a Job not found is nil in the map.
func (j *Jobs) read(ctx context.Context, keys []string) (map[string]*batch.Job, error) {
	read := make(map[string]*batch.Job, len(keys))
	for _, key := range keys {
		ns, name, err := toolscache.SplitMetaNamespaceKey(key)
		if err != nil {
			return nil, err
		}
		job, err := j.vc.BatchV1alpha1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			read[key] = nil
		case err != nil:
			return nil, fmt.Errorf("read job %s: %w", key, err)
		default:
			read[key] = job
		}
	}
	return read, nil
}

// list lists every Job and returns those of the slots want.
func (j *Jobs) list(ctx context.Context, want shard.SlotSet, s int) (map[string]*batch.Job, error) {
	listed := map[string]*batch.Job{}
	// Pages of 100: the Jobs not packed are those their writers made large.
	opts := metav1.ListOptions{Limit: 100}
	for {
		list, err := j.vc.BatchV1alpha1().Jobs("").List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		for i := range list.Items {
			job := &list.Items[i]
			if key := toolscache.MetaObjectToName(job).String(); want.HasKey(key, s) {
				listed[key] = job
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return listed, nil
		}
	}
}

// waitSynced waits for the first list of Jobs, or for ctx to end.
func (j *Jobs) waitSynced(ctx context.Context) bool {
	select {
	case <-j.listed:
		return true
	case <-ctx.Done():
		return false
	}
}

// lose cuts the Jobs of slots back to summaries, without events.
func (j *Jobs) lose(slots []int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, n := range slots {
		delete(j.held, n)
	}
	if j.slots == nil {
		return
	}
	lost, s, now := shard.NewSlotSet(slots), j.slots(), time.Now()
	for _, obj := range j.indexer.List() {
		job := obj.(*batch.Job)
		key := toolscache.MetaObjectToName(job).String()
		if _, summary := j.summary[key]; summary || !lost.HasKey(key, s) {
			continue
		}
		if err := j.indexer.Update(summarize(job)); err == nil {
			j.keepLocked(key, job, now)
		}
	}
}

// jobsStore is what the reflector writes to.
type jobsStore struct{ j *Jobs }

func (s jobsStore) Add(obj any) error { return s.Update(obj) }

func (s jobsStore) Update(obj any) error {
	s.j.mu.Lock()
	defer s.j.mu.Unlock()
	return s.j.storeLocked(obj)
}

func (s jobsStore) Delete(obj any) error {
	key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return err
	}
	s.j.mu.Lock()
	defer s.j.mu.Unlock()
	return s.j.deleteLocked(key, obj)
}

// Replace is a (re)list: Jobs not in it are gone.
func (s jobsStore) Replace(list []any, _ string) error {
	j := s.j
	j.mu.Lock()
	defer j.mu.Unlock()
	seen := make(map[string]bool, len(list))
	for _, obj := range list {
		if key, err := toolscache.MetaNamespaceKeyFunc(obj); err == nil {
			seen[key] = true
		}
		if err := j.storeLocked(obj); err != nil {
			return err
		}
	}
	for _, key := range j.indexer.ListKeys() {
		if !seen[key] {
			if err := j.deleteLocked(key, nil); err != nil {
				return err
			}
		}
	}
	if !j.HasSynced() { // relists come later; only the first closes it, all under mu
		close(j.listed)
	}
	return nil
}

func (s jobsStore) Resync() error { return nil }
