package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/time/rate"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	batchv1informers "k8s.io/client-go/informers/batch/v1"
	schedulingv1informers "k8s.io/client-go/informers/scheduling/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"
	vcinformers "volcano.sh/apis/pkg/client/informers/externalversions"
	vcbatchinformers "volcano.sh/apis/pkg/client/informers/externalversions/batch/v1alpha1"
	vcbusinformers "volcano.sh/apis/pkg/client/informers/externalversions/bus/v1alpha1"
	vcflowinformers "volcano.sh/apis/pkg/client/informers/externalversions/flow/v1alpha1"
	vcschedulinginformers "volcano.sh/apis/pkg/client/informers/externalversions/scheduling/v1beta1"

	"github.com/ringfire/ringfire/internal/guard"
	"github.com/ringfire/ringfire/shard"
)

// Resource names a kind of object that Jobs own (or, VolcanoJobs, that JobFlows make).
type Resource string

// The resources Jobs own.
const (
	Pods            Resource = "pods"
	PodGroups       Resource = "podgroups"
	PVCs            Resource = "persistentvolumeclaims"
	Services        Resource = "services"
	ConfigMaps      Resource = "configmaps"
	Secrets         Resource = "secrets"
	NetworkPolicies Resource = "networkpolicies"
	// VolcanoJobs are the Jobs a JobFlow makes. The cache watches them all (Cache.Jobs), but
	// they carry no slot label and their maker's key is its own: the controller that makes
	// them feeds their expectations (Expectations.Observed).
	VolcanoJobs Resource = "jobs"
)

// Owned lists the sharded resources: those the cache watches, by slot. Secrets
// are not among them: a replica may not list or watch Secrets (that would be
// read access to every Secret of the cluster, whatever the label selector), so
// the ssh plugin's Secret is created, read and deleted by name only.
var Owned = []Resource{Pods, PodGroups, PVCs, Services, ConfigMaps, NetworkPolicies}

// Watched reports whether the cache watches r (it is in Owned, or it is VolcanoJobs).
func Watched(r Resource) bool { return r == VolcanoJobs || slices.Contains(Owned, r) }

// Config configures a Cache.
type Config struct {
	Kube    kubernetes.Interface
	Volcano vcclient.Interface
	Logger  hclog.Logger
	// SlotsReady is called once the owned objects of newly gained slots are
	// listed: the controllers enqueue the slots' Jobs then. It runs on a
	// reflector's goroutine and must not block.
	SlotsReady func(slots []int)
	// SlotsEarly, if set, is called once every part of newly gained slots is
	// ready but their pods, which are still being listed (PodsListing): the
	// controllers may look at the slots' Jobs that have work, reading each
	// Job's pods from the API server (JobInfoFromServer). SlotsReady follows
	// as before. It runs on a reflector's goroutine and must not block.
	SlotsEarly func(slots []int)
	// Resync of the cluster-wide informers; 0 disables it.
	Resync time.Duration
	// ExpectationTTL bounds how long a create or delete the cache has not
	// seen is remembered (DefaultExpectationTTL when 0).
	ExpectationTTL time.Duration
	// Slots is the ring's slot count (shard.Ownership.Slots), by which the
	// cache tells the Jobs of held slots, kept in full, from the others, kept
	// as summaries. Nil keeps every Job in full.
	Slots func() int
	// Metadata, when set with Slots, turns on adoption (adopt.go): the
	// objects of gained slots' Volcano Jobs that lack the slot label are
	// labelled before the slots become ready.
	Metadata metadata.Interface
	// Valid, when set, reports whether this replica's membership is still
	// valid right now; adoption checks it before every write.
	Valid func() error
	// PodListRate, when positive, paces the lists of the slots' pods: a
	// replica's pod lists together take at most this many pods a second
	// (pace.go). Zero lists as fast as the API server answers.
	PodListRate float64
}

// Cache is a replica's view of the cluster. It implements shard.Listener.
type Cache struct {
	cfg     Config
	log     hclog.Logger
	kube    informers.SharedInformerFactory
	volcano vcinformers.SharedInformerFactory
	owned   map[Resource]*Sharded
	jobs    *Jobs
	expect  *Expectations
	adopt   *adopter // nil when adoption is off
	// optional are the cluster-wide informers a controller asked for, as
	// ringfire_cache_objects counts them.
	optional optionalInformers

	synced atomic.Bool // the cluster-wide informers have listed

	mu      sync.Mutex
	ctx     context.Context // set by Start
	pending [][]int         // gains that arrived before Start
	// unlisted holds, for each gained slot not ready yet, the Owned
	// resources (bit i for Owned[i]) that have not listed it yet, bit
	// len(Owned) while its Jobs are not all in full yet, and bit
	// len(Owned)+1 until its adoption sweep is done.
	unlisted map[int]uint32
	// gen counts the gains of each slot, so that a sweep for one gain
	// cannot answer for a later one.
	gen map[int]uint64
	// gainedAt is when each slot not ready yet was gained and how long each
	// part of its gain took so far, for the log of how long its lists took.
	gainedAt map[int]*gainTimes
	// held is the slots gained and not lost since. The ring marks a slot held
	// (and the dispatcher runs its work) a moment before the cache hears of the
	// gain: Listed says no for such a slot.
	held map[int]bool
	// early holds the Jobs whose pods were read from the API server
	// (JobInfoFromServer, BatchPodsFromServer), by kind and key, with their
	// slot: until the cache shows their pods as that read did, the cache may
	// be older than what the read showed and the writes made on it
	// (ReadEarly, CaughtUp, and their Batch twins).
	early map[earlyKey]int
	// tooLarge holds the Jobs, by kind and key, with their slot, that an early read
	// found to have more than EarlyPodsLimit pods: they wait for their slot's
	// list without another read, until the slot is ready or lost.
	tooLarge map[earlyKey]int
	// earlyReads bounds the early reads running at once (EarlyReadsLimit).
	earlyReads chan struct{}

	// batchJobs is the store of the batch/v1 Jobs once their controller asked for them
	// (BatchJobs): the owners of their pods (ownerOf).
	batchJobs atomic.Pointer[toolscache.Store]
	// refetch reads again the objects stored as stubs before their Job came (foreign.go).
	refetch *refetcher
}

// gainTimes is when a slot was gained and, per bit of unlisted, how long
// after that the part listed (zero while it has not).
type gainTimes struct {
	at    time.Time
	parts [32]time.Duration
}

// jobsBit is the bit of unlisted that stands for the Jobs; adoptBit the one
// that stands for the adoption sweep.
var (
	jobsBit  = len(Owned)
	adoptBit = len(Owned) + 1
)

// New returns a Cache; register handlers on its factories' informers and on
// its Owned resources, then Start it.
func New(cfg Config) *Cache {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	c := &Cache{
		cfg: cfg,
		log: cfg.Logger.Named("cache"),
		// Every cluster-wide informer keeps its objects without managedFields
		// (those with a transform of their own, SlimPodGroup and SlimBatchJob,
		// drop them too).
		kube:    informers.NewSharedInformerFactoryWithOptions(cfg.Kube, cfg.Resync, informers.WithTransform(StripManagedFields)),
		volcano: vcinformers.NewSharedInformerFactoryWithOptions(cfg.Volcano, cfg.Resync, vcinformers.WithTransform(StripManagedFields)),
		owned:   map[Resource]*Sharded{},
		expect:  NewExpectations(cfg.ExpectationTTL),
	}
	c.unlisted = map[int]uint32{}
	c.held = map[int]bool{}
	c.gen = map[int]uint64{}
	c.gainedAt = map[int]*gainTimes{}
	c.early = map[earlyKey]int{}
	c.tooLarge = map[earlyKey]int{}
	c.earlyReads = make(chan struct{}, EarlyReadsLimit)
	if cfg.Metadata != nil && cfg.Slots != nil {
		c.adopt = newAdopter(c, cfg.Metadata, cfg.Valid, c.log)
	}
	c.refetch = newRefetcher(c)
	for i, r := range Owned {
		c.owned[r] = NewSharded(string(r), newObject(r), c.listWatch(r), c.log)
		c.owned[r].keepOwned(r, c.ownerOf, c.refetch.add)
		c.owned[r].OnListed(func(slots []int) { c.listed(i, slots) })
		// First of the resource's handlers: an expectation is met before any
		// controller hears of the object.
		c.owned[r].AddHandler(guard.Handler("cache", c.log, observer{r: r, e: c.expect}))
	}
	c.jobs = newJobs(cfg.Volcano, cfg.Slots, c.log, func(slots []int) { c.listed(jobsBit, slots) })
	// First of the Jobs' handlers: a Job's objects stored as stubs before it came are read
	// again before any controller hears of the Job.
	_, _ = c.jobs.AddEventHandler(guard.Handler("cache", c.log, c.jobsHandler(false)))
	// Touch the cluster-wide informers so the factories start them.
	c.volcano.Bus().V1alpha1().Commands().Informer()
	c.volcano.Scheduling().V1beta1().Queues().Informer()
	c.kube.Scheduling().V1().PriorityClasses().Informer()
	pgs := c.volcano.Scheduling().V1beta1().PodGroups().Informer()
	// It cannot fail on an informer that has not started.
	_ = pgs.SetTransform(guard.Transform("cache", c.log, SlimPodGroup))
	// Cannot fail either.
	_ = c.volcano.Bus().V1alpha1().Commands().Informer().SetTransform(guard.Transform("cache", c.log, SlimCommand))
	return c
}

// Queues are the cluster's Queues.
func (c *Cache) Queues() vcschedulinginformers.QueueInformer {
	return c.volcano.Scheduling().V1beta1().Queues()
}

// Commands are the cluster's Commands.
func (c *Cache) Commands() vcbusinformers.CommandInformer {
	return c.volcano.Bus().V1alpha1().Commands()
}

// PriorityClasses are the cluster's PriorityClasses.
func (c *Cache) PriorityClasses() schedulingv1informers.PriorityClassInformer {
	return c.kube.Scheduling().V1().PriorityClasses()
}

// CronJobs are the cluster's Volcano CronJobs. Only a replica that runs the
// CronJob controller asks for them: the informer starts then, and the cache
// waits for it to list.
func (c *Cache) CronJobs() vcbatchinformers.CronJobInformer {
	inf := c.volcano.Batch().V1alpha1().CronJobs()
	c.optional.add("cronjobs", inf.Informer())
	return inf
}

// BatchJobs are the cluster's batch/v1 Jobs. Only a replica that runs the
// batch Job controller asks for them: the informer starts then, and the cache
// waits for it to list. Jobs another controller manages are kept as
// summaries (SlimBatchJob): the controller reads only its own in full.
func (c *Cache) BatchJobs() batchv1informers.JobInformer {
	inf := c.kube.Batch().V1().Jobs()
	// Cannot fail on an informer that has not started; a second call finds
	// the transform set.
	_ = inf.Informer().SetTransform(guard.Transform("cache", c.log, SlimBatchJob))
	c.optional.add("batchjobs", inf.Informer())
	store := inf.Informer().GetStore()
	if c.batchJobs.CompareAndSwap(nil, &store) {
		_, _ = inf.Informer().AddEventHandler(guard.Handler("cache", c.log, c.jobsHandler(true)))
	}
	return inf
}

// BatchJobManager is the spec.managedBy value of the batch/v1 Jobs ringfire
// runs; Kubernetes' own Job controller leaves them alone.
const BatchJobManager = "ringfire.io/job-controller"

// SlimBatchJob keeps a batch/v1 Job that ringfire does not manage as a stub
// of its metadata (cutMeta: identity, controller, deletion, the labels and
// annotations ringfire reads) and spec.managedBy: a cluster's many Jobs of
// other controllers cost the cache at most StubBytes each, not their pod
// templates, status, labels and annotations. Those ringfire manages are kept
// whole, less their managedFields (StripManagedFields): the controller
// writes their status from the cached copy.
func SlimBatchJob(obj any) (any, error) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return obj, nil
	}
	if managed(job) {
		return StripManagedFields(job)
	}
	slim := &batchv1.Job{TypeMeta: job.TypeMeta, ObjectMeta: cutMeta(&job.ObjectMeta, nil)}
	if m := job.Spec.ManagedBy; m != nil && len(*m) <= 63 { // the API server's own bound
		slim.Spec.ManagedBy = m
	}
	return slim, nil
}

// SlimCommand is the transform of the Commands: a Command is kept as what the
// Job and Queue controllers read of it, its identity (cutMeta), its target
// and its action (cut to maxValue bytes: no action is that long, so a longer
// one stays as unknown as it was). Every replica watches every Command of the
// cluster; one costs it at most CommandBytes, whatever its writer put in its
// labels, annotations, reason and message.
func SlimCommand(obj any) (any, error) {
	cmd, ok := obj.(*bus.Command)
	if !ok {
		return obj, nil
	}
	slim := &bus.Command{TypeMeta: cmd.TypeMeta, ObjectMeta: cutMeta(&cmd.ObjectMeta, nil), Action: cmd.Action}
	if len(slim.Action) > maxValue {
		slim.Action = slim.Action[:maxValue]
	}
	if t := cmd.TargetObject; t != nil && validRef(t) {
		target := *t
		slim.TargetObject = &target
	}
	return slim, nil
}

// CommandBytes bounds the JSON of a Command as SlimCommand keeps it.
const CommandBytes = StubBytes + 2<<10

// JobFlows are the cluster's JobFlows, and JobTemplates its JobTemplates. Only a replica that
// runs the JobFlow controllers asks for them: the informers start then, and the cache waits
// for them to list.
func (c *Cache) JobFlows() vcflowinformers.JobFlowInformer {
	inf := c.volcano.Flow().V1alpha1().JobFlows()
	c.optional.add("jobflows", inf.Informer())
	return inf
}

// JobTemplates: see JobFlows.
func (c *Cache) JobTemplates() vcflowinformers.JobTemplateInformer {
	inf := c.volcano.Flow().V1alpha1().JobTemplates()
	c.optional.add("jobtemplates", inf.Informer())
	return inf
}

// QueuePodGroups are every PodGroup of the cluster, as summaries for
// counting them by queue (SlimPodGroup). Not for anything
// that needs a whole PodGroup: the held slots' PodGroups are in
// Owned(PodGroups).
func (c *Cache) QueuePodGroups() toolscache.SharedIndexInformer {
	return c.volcano.Scheduling().V1beta1().PodGroups().Informer()
}

// SlimPodGroup is the transform of QueuePodGroups: it keeps only what counting
// by queue needs (identity, queue, phase), so that watching every PodGroup of
// the cluster costs a few hundred bytes apiece instead of the whole object.
func SlimPodGroup(obj any) (any, error) {
	pg, ok := obj.(*scheduling.PodGroup)
	if !ok {
		return obj, nil // a tombstone or another type: leave it alone
	}
	return &scheduling.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name: pg.Name, Namespace: pg.Namespace, UID: pg.UID, ResourceVersion: pg.ResourceVersion,
		},
		Spec:   scheduling.PodGroupSpec{Queue: pg.Spec.Queue},
		Status: scheduling.PodGroupStatus{Phase: pg.Status.Phase},
	}, nil
}

// Jobs is the view of the cluster's Volcano Jobs: in full for the held
// slots, summaries for the others.
func (c *Cache) Jobs() *Jobs { return c.jobs }

// Owned returns the sharded view of one owned resource.
func (c *Cache) Owned(r Resource) *Sharded { return c.owned[r] }

// Expectations is the memory of the creates and deletes of owned objects
// that the cache has not seen yet; it forgets the slots this replica loses.
func (c *Cache) Expectations() *Expectations { return c.expect }

// Creating reports whether a create of r namespace/name by the Job at key (of
// slot) must not be issued: either a create of it is still on its way to the
// cache (left is how long until that expectation lapses), or the object is in
// the cache already (left is 0). The second case is a caller's view taken
// just before the object arrived: the expectation is met once the object is
// stored, so a view read before that and an expectation checked after would
// otherwise issue the create again, to be refused. The object's own event
// brings the Job back. For a resource the cache does not watch (Secrets) the
// expectation alone answers: it stands for the object the Job made.
func (c *Cache) Creating(slot int, key string, r Resource, namespace, name string) (left time.Duration, pending bool) {
	if left, pending := c.expect.Creating(slot, key, r, namespace, name); pending {
		return left, true
	}
	obj := toolscache.NewObjectName(namespace, name).String()
	switch {
	case r == VolcanoJobs:
		_, present, _ := c.jobs.GetIndexer().GetByKey(obj)
		return 0, present
	case !Watched(r):
		return 0, false // no cache of r: the expectation alone remembers the object
	}
	_, present, _ := c.owned[r].Indexer().GetByKey(obj)
	return 0, present
}

// Start starts the cluster-wide informers and waits until they have listed,
// then starts reflectors for slots gained before. It returns an error if ctx
// ends first.
func (c *Cache) Start(ctx context.Context) error {
	began := time.Now()
	c.kube.Start(ctx.Done())
	c.volcano.Start(ctx.Done())
	go c.jobs.run(ctx)
	go c.refetch.run(ctx)
	if c.adopt != nil {
		go c.adopt.run(ctx)
	}
	go c.remindWhileListing(ctx)
	if !c.jobs.waitSynced(ctx) {
		return fmt.Errorf("cache of jobs did not sync: %w", errors.Join(ctx.Err(), errors.New("is the Volcano CRD installed?")))
	}
	for typ, ok := range c.volcano.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("cache of %v did not sync: %w", typ, errors.Join(ctx.Err(), errors.New("is the Volcano CRD installed?")))
		}
	}
	for typ, ok := range c.kube.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("cache of %v did not sync: %w", typ, ctx.Err())
		}
	}
	// The gains held back are started under the lock, so a SlotsLost cannot come between
	// and be overtaken by a replayed gain of the same slot.
	c.mu.Lock()
	c.ctx = ctx
	for _, slots := range c.pending {
		c.gainLocked(ctx, slots)
	}
	c.pending = nil
	c.mu.Unlock()
	c.synced.Store(true)
	// How long a start waited for the cluster-wide lists, before any slot's own: a
	// slow start is this or the slots' lists (their own log line, when gained).
	full, summaries := c.jobs.Counts()
	c.log.Info("cluster-wide caches listed", "took", time.Since(began).Round(time.Millisecond), "jobs", full+summaries)
	go func() {
		<-ctx.Done()
		for _, s := range c.owned {
			s.Stop()
		}
	}()
	return nil
}

// SlotsGained starts watching the owned objects of slots; once every owned
// resource has listed a slot, Config.SlotsReady learns it.
func (c *Cache) SlotsGained(slots []int) {
	c.expect.DropSlots(slots) // a fresh list is the truth now
	c.expect.Hold(slots)
	c.jobs.hold(slots)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range slots {
		c.held[n] = true
	}
	if c.ctx == nil {
		c.pending = append(c.pending, slices.Clone(slots))
		return
	}
	c.gainLocked(c.ctx, slots)
}

// gainLocked starts the reflectors of slots; c.mu is held.
func (c *Cache) gainLocked(ctx context.Context, slots []int) {
	if len(slots) == 0 {
		return
	}
	mask := uint32(1)<<(len(Owned)+1) - 1
	if c.adopt != nil {
		mask |= 1 << adoptBit
	}
	gens := make(map[int]uint64, len(slots))
	now := time.Now()
	for _, n := range slots {
		c.gainedAt[n] = &gainTimes{at: now}
		c.unlisted[n] = mask
		c.gen[n]++
		gens[n] = c.gen[n]
	}
	for _, r := range Owned {
		if r != Pods { // started by clearLocked, once the rest is in
			c.owned[r].Gain(ctx, slots)
		}
	}
	c.jobs.gain(ctx, slots)
	if c.adopt != nil {
		c.adopt.gain(gens)
	}
}

// gainCurrent reports whether slot is held, not ready yet, by the gain of
// generation gen.
func (c *Cache) gainCurrent(slot int, gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, pending := c.unlisted[slot]
	return pending && c.gen[slot] == gen
}

// jobsListed reports whether the Jobs of every slot of gens that is still held by its gain,
// and not ready, are in the cache in full.
func (c *Cache) jobsListed(gens map[int]uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, g := range gens {
		if left, pending := c.unlisted[n]; pending && c.gen[n] == g && left&(1<<jobsBit) != 0 {
			return false
		}
	}
	return true
}

// adoptedSlots is told that the sweep for the gains gens is done.
func (c *Cache) adoptedSlots(gens map[int]uint64) {
	// Like a reflector's store write that tells listed, under a resource's gate: a loss of
	// these slots waits for SlotsReady (cf. listed).
	gate := &c.owned[Pods].gate
	gate.RLock()
	defer gate.RUnlock()
	slots := make([]int, 0, len(gens))
	c.mu.Lock()
	for n, g := range gens {
		if c.gen[n] == g {
			slots = append(slots, n)
		}
	}
	ready, early := c.clearLocked(adoptBit, slots)
	ctx := c.ctx
	c.mu.Unlock()
	c.tell(ctx, ready, early)
}

// slotCount is the ring's slot count.
func (c *Cache) slotCount() int { return c.cfg.Slots() }

// AdoptStats returns what the adoption sweeps have done; zero when adoption
// is off.
func (c *Cache) AdoptStats() AdoptStats {
	if c.adopt == nil {
		return AdoptStats{}
	}
	return c.adopt.stats()
}

// Listed reports whether the slot of key is held and every owned resource has listed its
// objects since it was last gained (and its adoption sweep is done). Before that, the cache's
// view of the key is partial or empty, and the controllers leave the key to SlotsReady. A slot
// the ring holds and the cache has not heard of yet is not listed: the ring marks a slot held
// a moment before it tells the cache. A cache without a slot count (Config.Slots) holds every
// key.
func (c *Cache) Listed(key string, slots int) bool {
	if c.cfg.Slots == nil {
		return true
	}
	held, left := c.gainOf(key, slots)
	return held && left == 0
}

// gainOf reports whether the slot of key is held by a started cache, and
// which parts of its gain are still being listed (the bits of unlisted; 0
// when none is).
func (c *Cache) gainOf(key string, slots int) (held bool, left uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := shard.SlotOf(key, slots)
	return c.held[n] && c.ctx != nil, c.unlisted[n]
}

// Synced reports whether the cluster-wide informers have listed: until then the
// replica has no view of the cluster and starts no work.
func (c *Cache) Synced() bool { return c.synced.Load() }

// remindWhileListing logs, every 30 s until the cluster-wide informers have listed, that
// they have not: a CRD that is not installed keeps its informer from ever listing, and the
// replica would otherwise wait without a word.
func (c *Cache) remindWhileListing(ctx context.Context) {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for waited := 30 * time.Second; ; waited += 30 * time.Second {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.synced.Load() {
			return
		}
		c.log.Warn("the cluster-wide caches have not listed yet; is every Volcano CRD installed (jobs, commands, queues, cronjobs, podgroups; see deploy/crds) and the API server reachable?", "waited", waited)
	}
}

// listed is told by the reflectors of Owned[i] that slots are listed (i is
// jobsBit when the Jobs of slots are all in full). Slots
// every resource has listed are ready. Readiness is kept per slot, not per
// gain: a reflector that loses some of its slots before it lists starts over
// on the rest, and those must still become ready.
func (c *Cache) listed(i int, slots []int) {
	c.mu.Lock()
	if len(slots) > 0 {
		if g, ok := c.gainedAt[slots[0]]; ok {
			c.log.Debug("gained slots listed", "part", partName(i), "slots", len(slots), "took", time.Since(g.at).Round(time.Millisecond))
		}
	}
	ready, early := c.clearLocked(i, slots)
	ctx := c.ctx
	c.mu.Unlock()
	// Called here, on the reflector's goroutine inside its store write, so that it comes
	// before any loss of these slots (Lose waits for store writes) and never after a later
	// gain of them.
	c.tell(ctx, ready, early)
}

// partName names bit i of unlisted: an owned resource, the Jobs or the
// adoption sweep.
func partName(i int) string {
	switch {
	case i < len(Owned):
		return string(Owned[i])
	case i == jobsBit:
		return "jobs"
	default:
		return "adoption"
	}
}

// clearLocked clears bit i of slots in unlisted and returns the slots that
// are ready now, and those that wait for nothing but their pods now (early),
// whose pods' list it starts; c.mu is held, so that a loss (SlotsLost) comes
// wholly before or after that start. It logs how long the ready slots took from
// their gain, which part of the gain came last, and how long each part took
// (the slowest slot's), the one place to look when a failover is slow.
func (c *Cache) clearLocked(i int, slots []int) (ready, early []int) {
	var took, tookEarly time.Duration
	var parts [32]time.Duration
	defer func() {
		if len(early) > 0 {
			c.log.Info("gained slots ready but their pods", "slots", len(early), "took", tookEarly.Round(time.Millisecond), "last", partName(i))
		}
		if len(ready) > 0 {
			c.log.Info("gained slots ready", "slots", len(ready), "took", took.Round(time.Millisecond), "last", partName(i), "parts", partTimes(parts[:adoptBit+1]))
		}
	}()
	for _, n := range slots {
		left, ok := c.unlisted[n]
		if !ok {
			continue
		}
		g := c.gainedAt[n]
		if g != nil {
			g.parts[i] = time.Since(g.at)
		}
		if left&(1<<i) != 0 && left&^(1<<i) == 1<<podsBit {
			early = append(early, n)
			if g != nil {
				tookEarly = max(tookEarly, time.Since(g.at))
			}
		}
		if left &^= 1 << i; left == 0 {
			delete(c.unlisted, n)
			ready = append(ready, n)
			if g != nil {
				took = max(took, time.Since(g.at))
				for p, d := range g.parts {
					parts[p] = max(parts[p], d)
				}
				delete(c.gainedAt, n)
			}
		} else {
			c.unlisted[n] = left
		}
	}
	if len(ready) > 0 && len(c.tooLarge) > 0 {
		c.forgetTooLargeLocked(shard.NewSlotSet(ready))
	}
	if len(early) > 0 && c.ctx != nil {
		// The pods of a gain are listed last, once everything else of
		// their slots is in: theirs is by far the largest list (at 100,000
		// resident pods a third of the ring is 30,000 pods), and running it
		// beside the others made them, the PodGroups above all, wait for
		// the API server behind it, and with them every Job the gain has
		// work for (they run as soon as the rest is in, reading their own
		// pods: early.go).
		c.owned[Pods].Gain(c.ctx, early)
	}
	return ready, early
}

// partTimes words how long each part of a gain took, as "pods=1.2s
// jobs=40ms ...", leaving out the parts that were not waited for.
func partTimes(parts []time.Duration) string {
	var b strings.Builder
	for i, d := range parts {
		if d == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(partName(i))
		b.WriteByte('=')
		b.WriteString(d.Round(time.Millisecond).String())
	}
	return b.String()
}

// tell ends the hold on the expectations of ready slots
// (Expectations.Release), then passes early slots to SlotsEarly and ready
// ones to SlotsReady, which must not block.
func (c *Cache) tell(ctx context.Context, ready, early []int) {
	if len(ready) > 0 {
		c.expect.Release(ready)
	}
	if ctx == nil || ctx.Err() != nil {
		return
	}
	if len(early) > 0 && c.cfg.SlotsEarly != nil {
		c.cfg.SlotsEarly(early)
	}
	if len(ready) > 0 && c.cfg.SlotsReady != nil {
		c.cfg.SlotsReady(ready)
	}
}

// SlotsLost drops the owned objects of slots.
func (c *Cache) SlotsLost(slots []int) {
	c.expect.DropSlots(slots)
	c.jobs.lose(slots)
	c.mu.Lock()
	for _, n := range slots {
		delete(c.unlisted, n)
		delete(c.held, n)
		delete(c.gainedAt, n)
	}
	lost := shard.NewSlotSet(slots)
	for ek, n := range c.early {
		if lost[n] {
			delete(c.early, ek)
		}
	}
	c.forgetTooLargeLocked(lost)
	if c.ctx == nil {
		// Not started: forget the slots in the gains held back for Start.
		for i, gain := range c.pending {
			c.pending[i] = slices.DeleteFunc(gain, func(n int) bool { return lost[n] })
		}
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	for _, r := range Owned {
		c.owned[r].Lose(slots)
	}
}

var _ shard.Listener = (*Cache)(nil)

func newObject(r Resource) func() runtime.Object {
	return func() runtime.Object {
		switch r {
		case Pods:
			return &corev1.Pod{}
		case PodGroups:
			return &scheduling.PodGroup{}
		case PVCs:
			return &corev1.PersistentVolumeClaim{}
		case Services:
			return &corev1.Service{}
		case ConfigMaps:
			return &corev1.ConfigMap{}
		default:
			return &networkingv1.NetworkPolicy{}
		}
	}
}

// listWatch lists and watches a resource in all namespaces.
func (c *Cache) listWatch(r Resource) ListWatchFunc {
	type lw = ListWatchFunc
	type listOpts = metav1.ListOptions
	k, v := c.cfg.Kube, c.cfg.Volcano
	switch r {
	case Pods:
		list := func(ctx context.Context, o listOpts) (runtime.Object, error) { return k.CoreV1().Pods("").List(ctx, o) }
		if c.cfg.PodListRate > 0 {
			c.log.Info("pod lists paced", "pods_per_second", c.cfg.PodListRate)
			list = pacedList(rate.NewLimiter(rate.Limit(c.cfg.PodListRate), pageBurst), list)
		}
		return lw{
			List: list,
			Watch: func(ctx context.Context, o listOpts) (watch.Interface, error) {
				return k.CoreV1().Pods("").Watch(ctx, o)
			},
		}
	case PodGroups:
		return lw{
			List: func(ctx context.Context, o listOpts) (runtime.Object, error) {
				return v.SchedulingV1beta1().PodGroups("").List(ctx, o)
			},
			Watch: func(ctx context.Context, o listOpts) (watch.Interface, error) {
				return v.SchedulingV1beta1().PodGroups("").Watch(ctx, o)
			},
		}
	case PVCs:
		return lw{
			List: func(ctx context.Context, o listOpts) (runtime.Object, error) {
				return k.CoreV1().PersistentVolumeClaims("").List(ctx, o)
			},
			Watch: func(ctx context.Context, o listOpts) (watch.Interface, error) {
				return k.CoreV1().PersistentVolumeClaims("").Watch(ctx, o)
			},
		}
	case Services:
		return lw{
			List: func(ctx context.Context, o listOpts) (runtime.Object, error) {
				return k.CoreV1().Services("").List(ctx, o)
			},
			Watch: func(ctx context.Context, o listOpts) (watch.Interface, error) {
				return k.CoreV1().Services("").Watch(ctx, o)
			},
		}
	case ConfigMaps:
		return lw{
			List: func(ctx context.Context, o listOpts) (runtime.Object, error) {
				return k.CoreV1().ConfigMaps("").List(ctx, o)
			},
			Watch: func(ctx context.Context, o listOpts) (watch.Interface, error) {
				return k.CoreV1().ConfigMaps("").Watch(ctx, o)
			},
		}
	default:
		return lw{
			List: func(ctx context.Context, o listOpts) (runtime.Object, error) {
				return k.NetworkingV1().NetworkPolicies("").List(ctx, o)
			},
			Watch: func(ctx context.Context, o listOpts) (watch.Interface, error) {
				return k.NetworkingV1().NetworkPolicies("").Watch(ctx, o)
			},
		}
	}
}
