package shard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/internal/etcdloop"
)

// A Quarantine keeps poison keys from running: a key whose handler panicked,
// went its time budget without progress (progress.go), was in flight while the
// replica's live heap grew past its memory budget, or kept running long after
// its slot was lost, is not run
// again until its object changes (Dispatcher.Release). Other keys, those of
// the same slot included, keep being served.
//
// What survives a crash is a mark in etcd, written before the replica can
// die of the key: a run is marked as a suspect the moment the watchdog sees
// it misbehave (past the time budget, in flight while memory is over budget,
// running on a lost slot), and a mark stays when its replica is OOM-killed,
// since it has no lease. Every replica follows the marks, and a key marked
// by anything but a run of its own still in flight is not run: the next
// holder of a key that killed a replica does not run it, and does not die of
// it. Marks are deleted when the key is released.
//
// One Quarantine serves every dispatcher of a replica; each dispatcher's
// keys are marked under its name. The zero value is not usable: build one
// with NewQuarantine and Run it.
type Quarantine struct {
	cfg         QuarantineConfig
	log         hclog.Logger
	incarnation string // this process's, so that its own marks tell from an earlier run's
	synced      chan struct{}

	mu       sync.Mutex
	isSynced bool
	marks    map[string]Mark // as followed in etcd, by "<dispatcher>/<key>"
	local    map[string]Mark // quarantined here; kept also where the mark's write failed
	runs     map[string]*quarantineRun
	pressure bool // the heap is over budget: logged once per episode
	marking  int  // marks of mark being written
	// weighing are the runs suspected of the heap's growth whose weigh is under way: their
	// keys wait, neither run nor dropped, until it ends.
	weighing map[string]bool
	// floor is the live heap after the last weigh that acquitted its suspects: growth
	// below it is not the runs' (weigh).
	floor int64
}

// ReleaseAnnotation ends an object's quarantine when its value changes, without a change to
// its spec: `kubectl annotate --overwrite <kind>/<name> ringfire.io/release-quarantine=$(date +%s)`.
// The object keeps its status and its work (its pods, its Jobs); only its reconciles start
// again. The caches keep it in every cut of an object, so that no cut or fill reads as its
// change.
const ReleaseAnnotation = "ringfire.io/release-quarantine"

// QuarantineConfig configures a Quarantine. Start from
// DefaultQuarantineConfig; Client and Member are required.
type QuarantineConfig struct {
	// Client reaches the ring's etcd; Prefix is the ring's key prefix. Marks
	// live under <Prefix>/quarantine/<dispatcher>/<key>.
	Client *clientv3.Client
	Prefix string
	// Member is this replica's id, written in its marks for people.
	Member string
	// TimeBudget is the longest one handler call may go without progress
	// (progress.go: no API request of its answered): past it the call's
	// context is cancelled and the key quarantined (2 min in
	// DefaultQuarantineConfig, far above a reconcile's tens of milliseconds
	// and a slow API server's request timeout).
	TimeBudget time.Duration
	// MaxRun is the longest one handler call may run, progress or not (30 min
	// in DefaultQuarantineConfig: a reconcile's writes are bounded, so only
	// a handler that loops for ever comes near it).
	MaxRun time.Duration
	// MemoryBudget is the live heap, in bytes, past which the runs in flight
	// for longer than MarkAfter, during which the live heap grew by at least
	// MemoryBudget/memoryGrowthShare, are suspects: DefaultMemoryBudget() in
	// DefaultQuarantineConfig. A run the heap did not grow under is not
	// suspected, however high the heap stands (a replica whose cache is
	// large). Negative turns the memory check off; 0 is not accepted.
	MemoryBudget int64
	// MarkAfter is how long a run must have been in flight to be suspected
	// when memory is over budget (1 s in DefaultQuarantineConfig): reconciles
	// that began a moment ago did not bring the heap there.
	MarkAfter time.Duration
	// StuckAfter is how long a run may go on after its slot's context ended
	// (a handover, a fence) before it is suspected (15 s in
	// DefaultQuarantineConfig: well past the drain's cancel grace).
	StuckAfter time.Duration
	// Check is the watchdog's period (250 ms in DefaultQuarantineConfig).
	Check time.Duration
	// HeapBytes reads the live heap: the runtime's in
	// DefaultQuarantineConfig (tests set their own). Required while the
	// memory check is on.
	HeapBytes func() int64
	// Collect runs a garbage collection before the live heap is read again to weigh the
	// suspects of its growth (runtime.GC in DefaultQuarantineConfig).
	Collect func()
	// WeighFor is how long the runs suspected of the heap's growth, once cancelled, have to
	// return before they are weighed; one that has not returned by then is marked (2 s in
	// DefaultQuarantineConfig).
	WeighFor time.Duration
	// Valid, when set, reports whether this replica's membership is still
	// valid (Manager.Valid): while it fails (the replica's lease is past, as
	// after a pause of the process), no run is suspected of time or memory:
	// what a paused replica had in flight is not the keys' fault. A run that
	// goes on StuckAfter past its slot's end still is: that is how a key that
	// keeps its replica from renewing its lease is caught.
	Valid  func() error
	Logger hclog.Logger
}

// DefaultQuarantineConfig returns a QuarantineConfig with every default
// filled in; the caller adds Client, Prefix and Member.
func DefaultQuarantineConfig() QuarantineConfig {
	return QuarantineConfig{
		TimeBudget:   2 * time.Minute,
		MaxRun:       30 * time.Minute,
		MemoryBudget: DefaultMemoryBudget(),
		MarkAfter:    time.Second,
		StuckAfter:   15 * time.Second,
		Check:        250 * time.Millisecond,
		HeapBytes:    heapBytes,
		Collect:      runtime.GC,
		WeighFor:     2 * time.Second,
		Logger:       hclog.NewNullLogger(),
	}
}

// Validate reports every field of c that cannot work. It changes nothing:
// defaults come from DefaultQuarantineConfig, not from here.
func (c *QuarantineConfig) Validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("an etcd client is required"))
	}
	if c.Member == "" {
		errs = append(errs, errors.New("a member id is required"))
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"time budget", c.TimeBudget}, {"max run", c.MaxRun}, {"mark after", c.MarkAfter}, {"stuck after", c.StuckAfter}, {"check period", c.Check}, {"weigh for", c.WeighFor}} {
		if d.d <= 0 {
			errs = append(errs, fmt.Errorf("%s %v: must be positive", d.name, d.d))
		}
	}
	if c.MemoryBudget == 0 {
		errs = append(errs, errors.New("memory budget 0: bytes, positive, or negative to turn the memory check off (DefaultMemoryBudget follows the cgroup's limit)"))
	}
	if c.MemoryBudget > 0 && c.HeapBytes == nil {
		errs = append(errs, fmt.Errorf("memory budget %d with no HeapBytes to read the heap: set it, or a negative budget", c.MemoryBudget))
	}
	if c.Logger == nil {
		errs = append(errs, errors.New("a logger is required"))
	}
	return errors.Join(errs...)
}

// Mark is a key's quarantine record in etcd.
type Mark struct {
	Member      string    `json:"member"`
	Incarnation string    `json:"incarnation"`
	Reason      string    `json:"reason"`
	Since       time.Time `json:"since"`
	// Suspect is true while the marked run may still be in flight: the
	// replica marked it before it could die of it.
	Suspect bool `json:"suspect,omitempty"`
	// UID is the UID of the object the key named when it was marked, if the
	// dispatcher knows it (DispatcherConfig.UIDOf): the mark holds that
	// object only.
	UID string `json:"uid,omitempty"`
}

// quarantineRun is a handler call in flight.
type quarantineRun struct {
	id    string // "<dispatcher>/<key>"
	start time.Time
	heap  int64  // the live heap when it began (0 with the memory check off)
	uid   string // the UID of the key's object, "" when not known
	// progress is when it last made progress (progress.go), in Unix nanoseconds; 0 for
	// not since it began.
	progress atomic.Int64
	// released: the key was released while it ran; its end marks nothing
	// but a panic, and a suspect mark written meanwhile is taken back.
	released bool
	slot     context.Context
	cancel   context.CancelFunc
	lostAt   time.Time // when the watchdog first saw slot done
	suspect  string    // why the watchdog marked it; "" while it behaves
	// memory is why the watchdog suspects it of the heap's growth: it is cancelled and
	// weighed (weigh) rather than marked at its end.
	memory string
	done   chan struct{} // closed by end
}

// NewQuarantine validates cfg and returns a Quarantine; Run follows the
// marks and runs the watchdog.
func NewQuarantine(cfg QuarantineConfig) (*Quarantine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("quarantine config: %w", err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Quarantine{
		cfg: cfg, log: cfg.Logger.Named("quarantine"), incarnation: hex.EncodeToString(b[:]),
		synced: make(chan struct{}), marks: map[string]Mark{}, local: map[string]Mark{}, runs: map[string]*quarantineRun{},
		weighing: map[string]bool{},
	}, nil
}

// prefix is where the marks live.
func (q *Quarantine) prefix() string { return strings.TrimSuffix(q.cfg.Prefix, "/") + "/quarantine/" }

// Run follows the marks and watches the runs until ctx is done.
func (q *Quarantine) Run(ctx context.Context) {
	q.log.Info("watching for poison keys", "time_budget", q.cfg.TimeBudget, "memory_budget_mib", q.cfg.MemoryBudget>>20)
	var wg sync.WaitGroup
	wg.Go(func() {
		etcdloop.Follow{
			Client: q.cfg.Client, Prefix: q.prefix(), What: "the quarantined keys", Log: q.log,
			Read: func(kvs []*mvccpb.KeyValue, _ int64) bool {
				q.mu.Lock()
				defer q.mu.Unlock()
				clear(q.marks)
				for _, kv := range kvs {
					q.putMarkLocked(kv)
				}
				if !q.isSynced {
					q.isSynced = true
					close(q.synced)
				}
				return true
			},
			Changed: func(events []*clientv3.Event, _ int64) bool {
				q.mu.Lock()
				defer q.mu.Unlock()
				for _, ev := range events {
					if ev.Type == clientv3.EventTypeDelete {
						delete(q.marks, strings.TrimPrefix(string(ev.Kv.Key), q.prefix()))
						continue
					}
					q.putMarkLocked(ev.Kv)
				}
				return true
			},
		}.Run(ctx)
	})
	wg.Go(func() { q.watch(ctx) })
	wg.Wait()
}

func (q *Quarantine) putMarkLocked(kv *mvccpb.KeyValue) {
	var m Mark
	if err := json.Unmarshal(kv.Value, &m); err != nil {
		m = Mark{Reason: "an unreadable mark: " + err.Error()}
	}
	q.marks[strings.TrimPrefix(string(kv.Key), q.prefix())] = m
}

// await blocks until the marks have been read once, or ctx ends: a key must
// not run before its holder knows whether an earlier holder died of it.
func (q *Quarantine) await(ctx context.Context) error {
	select {
	case <-q.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// held reports why the key of dispatcher name is quarantined, if it is: a
// mark of this replica's, or one in etcd that no run of this process still
// in flight stands behind.
func (q *Quarantine) held(name, key string) (Mark, bool) {
	id := name + "/" + key
	q.mu.Lock()
	defer q.mu.Unlock()
	if m, ok := q.local[id]; ok {
		return m, true
	}
	m, ok := q.marks[id]
	if !ok {
		return Mark{}, false
	}
	if _, running := q.runs[id]; running && m.Incarnation == q.incarnation {
		return Mark{}, false
	}
	if m.Suspect && m.Incarnation != q.incarnation {
		m.Reason = fmt.Sprintf("replica %s was reconciling it when it stopped (%s)", m.Member, m.Reason)
	}
	return m, true
}

// Held reports whether the key of dispatcher name (a controller's: "job", "batchjob") is
// quarantined for the object of the given UID, and why: for a controller that waits on
// another's object (a CronJob on its Job, a JobFlow on its steps) to say so. A mark written
// for another object of the name does not hold this one; uid "" matches any mark.
func (q *Quarantine) Held(name, key, uid string) (reason string, ok bool) {
	m, ok := q.held(name, key)
	if !ok || (m.UID != "" && uid != "" && m.UID != uid) {
		return "", false
	}
	return m.Reason, true
}

// begin records a handler call of key on slot; its context is ctx with a
// cancel the watchdog may call. end must follow.
func (q *Quarantine) begin(name, key string, slot context.Context, uid string) (*quarantineRun, context.Context) {
	ctx, cancel := context.WithCancel(slot)
	r := &quarantineRun{id: name + "/" + key, start: time.Now(), slot: slot, cancel: cancel, uid: uid, done: make(chan struct{})}
	if q.cfg.MemoryBudget > 0 {
		r.heap = q.cfg.HeapBytes()
	}
	ctx = withRun(ctx, r)
	q.mu.Lock()
	q.runs[r.id] = r
	q.mu.Unlock()
	return r, ctx
}

// end records that the call returned. A call that panicked, or that the
// watchdog suspected, quarantines its key: the reason is returned, and the
// mark is written (as quarantined, no longer a suspect).
func (q *Quarantine) end(r *quarantineRun, panicked any) (reason string) {
	r.cancel()
	q.mu.Lock()
	delete(q.runs, r.id)
	close(r.done)
	reason = r.suspect
	if r.released {
		reason = "" // released while it ran: the object changed
	}
	if panicked != nil {
		reason = fmt.Sprintf("its reconcile panicked: %v", panicked)
	}
	if reason == "" {
		q.mu.Unlock()
		return ""
	}
	m := Mark{Member: q.cfg.Member, Incarnation: q.incarnation, Reason: reason, Since: time.Now().UTC(), UID: r.uid}
	q.local[r.id] = m
	q.mu.Unlock()
	q.put(r.id, m)
	return reason
}

// maxMarking bounds the marks of mark being written at once: past it a mark
// is kept here only, so that a storm of handler panics starts no more
// goroutines than this.
const maxMarking = 8

// mark quarantines the key of dispatcher name from outside a run: here at
// once, in etcd by a goroutine of its own, so that the caller (an informer's
// goroutine) never waits on etcd.
func (q *Quarantine) mark(name, key, reason, uid string) {
	id := name + "/" + key
	m := Mark{Member: q.cfg.Member, Incarnation: q.incarnation, Reason: reason, Since: time.Now().UTC(), UID: uid}
	q.mu.Lock()
	q.local[id] = m
	write := q.marking < maxMarking
	if write {
		q.marking++
	}
	q.mu.Unlock()
	if !write {
		q.log.Warn("too many quarantine marks being written; this one is kept on this replica only", "key", id, "reason", reason)
		return
	}
	go func() {
		defer func() {
			q.mu.Lock()
			q.marking--
			q.mu.Unlock()
		}()
		q.put(id, m)
		q.takeBackIfReleased(id)
	}()
}

// takeBackIfReleased deletes the mark of id, here and in etcd, if the key was released while
// mark was writing it: release deletes from etcd only a mark it knows of, and this one may have
// landed after it.
func (q *Quarantine) takeBackIfReleased(id string) {
	q.mu.Lock()
	_, still := q.local[id]
	if !still {
		delete(q.marks, id)
	}
	q.mu.Unlock()
	if still {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := q.cfg.Client.Delete(ctx, q.prefix()+id); err != nil {
		q.log.Warn("could not delete the mark of a key released while it was written; it stays quarantined on the replicas that see the mark until its object changes again",
			"key", id, "error", err)
	}
}

// release forgets the key's quarantine here and deletes its mark, if any.
// It reports whether the key was quarantined.
func (q *Quarantine) release(name, key string) bool {
	id := name + "/" + key
	q.mu.Lock()
	_, local := q.local[id]
	_, marked := q.marks[id]
	if r, running := q.runs[id]; running {
		r.released = true
	}
	delete(q.local, id)
	delete(q.marks, id) // the watch brings the delete too; the key must run at once
	q.mu.Unlock()
	if !local && !marked {
		return false
	}
	if marked {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := q.cfg.Client.Delete(ctx, q.prefix()+id); err != nil {
			q.log.Warn("could not delete the mark of a released key; it stays quarantined on the replicas that see the mark until its object changes again",
				"key", id, "error", err)
		}
	}
	return true
}

// keys are the keys of dispatcher name quarantined here or marked in etcd.
func (q *Quarantine) keys(name string) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, set := range []map[string]Mark{q.local, q.marks} {
		for id := range set {
			if key, ok := strings.CutPrefix(id, name+"/"); ok && !seen[key] {
				if _, running := q.runs[id]; !running {
					seen[key] = true
					out = append(out, key)
				}
			}
		}
	}
	return out
}

// count is how many keys of dispatcher name are quarantined whose slot
// holds reports held.
func (q *Quarantine) count(name string, holds func(key string) bool) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	seen := map[string]bool{}
	for _, set := range []map[string]Mark{q.local, q.marks} {
		for id := range set {
			key, ok := strings.CutPrefix(id, name+"/")
			if !ok || seen[key] {
				continue
			}
			if _, running := q.runs[id]; running {
				continue // a suspect still in flight here is not quarantined yet
			}
			seen[key] = true
			if holds(key) {
				n++
			}
		}
	}
	return n
}

// put writes a mark, bounded in time; a failure is logged and the key stays
// quarantined here (q.local) all the same.
func (q *Quarantine) put(id string, m Mark) {
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := q.cfg.Client.Put(ctx, q.prefix()+id, string(b)); err != nil {
		q.log.Warn("could not write a quarantine mark to etcd; the key is quarantined on this replica only",
			"key", id, "reason", m.Reason, "error", err)
		return
	}
	q.mu.Lock()
	q.marks[id] = m
	q.mu.Unlock()
}

// watch checks the runs in flight every Check until ctx is done.
func (q *Quarantine) watch(ctx context.Context) {
	tick := time.NewTicker(q.cfg.Check)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var weigh []suspect
		for _, s := range q.suspects(time.Now()) {
			if s.run.memory != "" {
				q.log.Warn("a reconcile is suspected of the heap's growth: it is cancelled, and its key quarantined if the heap falls once it has returned",
					"key", s.id, "reason", s.reason)
				weigh = append(weigh, s)
			} else {
				q.log.Error("quarantining a key that misbehaves: its reconcile is cancelled and it is not run again until its object changes",
					"key", s.id, "reason", s.reason)
			}
			s.run.cancel()
			q.put(s.id, Mark{Member: q.cfg.Member, Incarnation: q.incarnation, Reason: s.reason, Since: time.Now().UTC(), Suspect: true, UID: s.run.uid})
			q.mu.Lock()
			released := s.run.released
			q.mu.Unlock()
			if released { // released while the mark was written: it goes again
				q.takeBackIfReleased(s.id)
			}
		}
		if len(weigh) > 0 {
			q.weigh(ctx, weigh)
		}
	}
}

// weigh decides about the runs suspected of the live heap's growth, already cancelled and
// marked as suspects in etcd (so that, should the replica die of them meanwhile, their next
// holder does not run them): each gets WeighFor to return; one that does not is marked. Once
// the others have returned, a collection shows what they held: if the live heap fell by at
// least half the growth that makes a suspect, they held it, and are marked; else the growth
// was not theirs (a cache that grew, another part of the replica), and their suspect marks are
// taken back: they run again, and only growth past the heap now makes a suspect again.
//
// The heap tells growth, not whose it is: a run cannot be weighed alone while others run
// beside it. Cancelling it and seeing what its end frees is the weighing Go allows.
func (q *Quarantine) weigh(ctx context.Context, ss []suspect) {
	defer func() {
		q.mu.Lock()
		for _, s := range ss {
			delete(q.weighing, s.id)
		}
		q.mu.Unlock()
	}()
	wctx, cancel := context.WithTimeout(ctx, q.cfg.WeighFor)
	defer cancel()
	var ended, stuck []suspect
	before := int64(0)
	for _, s := range ss {
		before = max(before, s.heap)
		select {
		case <-s.run.done:
			ended = append(ended, s)
		case <-wctx.Done():
			stuck = append(stuck, s)
		}
	}
	if ctx.Err() != nil {
		return // stopping: the suspect marks stand
	}
	for _, s := range stuck {
		q.convict(s, s.reason+"; it went on after it was cancelled")
	}
	if len(ended) == 0 {
		return
	}
	q.cfg.Collect()
	after := q.cfg.HeapBytes()
	freed := before - after
	if freed >= q.cfg.MemoryBudget/memoryGrowthShare/2 {
		for _, s := range ended {
			q.convict(s, fmt.Sprintf("%s; the heap fell by %d MiB once it was cancelled", s.reason, freed>>20))
		}
		return
	}
	q.mu.Lock()
	q.floor = after
	q.mu.Unlock()
	for _, s := range ended {
		q.log.Info("a reconcile suspected of the heap's growth is cleared: the heap did not fall once it was cancelled; it runs again",
			"key", s.id, "freed_mib", freed>>20, "heap_mib", after>>20)
		q.acquit(s.id)
	}
}

// convict quarantines the key of a weighed run, here and in etcd, unless it was released
// meanwhile.
func (q *Quarantine) convict(s suspect, reason string) {
	q.log.Error("quarantining a key that misbehaves: it is not run again until its object changes", "key", s.id, "reason", reason)
	m := Mark{Member: q.cfg.Member, Incarnation: q.incarnation, Reason: reason, Since: time.Now().UTC(), UID: s.run.uid}
	q.mu.Lock()
	if s.run.released {
		q.mu.Unlock()
		return
	}
	q.local[s.id] = m
	q.mu.Unlock()
	q.put(s.id, m)
}

// acquit takes back the suspect mark of a weighed run.
func (q *Quarantine) acquit(id string) {
	q.mu.Lock()
	delete(q.marks, id)
	q.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := q.cfg.Client.Delete(ctx, q.prefix()+id); err != nil {
		q.log.Warn("could not delete the suspect mark of a cleared key; the replicas that see it hold the key until its object changes",
			"key", id, "error", err)
	}
}

// cancelledToWeigh reports whether the watchdog cancelled r, which has ended, to weigh its
// part in the heap's growth.
func (q *Quarantine) cancelledToWeigh(r *quarantineRun) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return r.memory != ""
}

// weighed reports whether the key of dispatcher name is being weighed (weigh): it waits.
func (q *Quarantine) weighed(name, key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.weighing[name+"/"+key]
}

// memoryGrowthShare: a run is a memory suspect only if the live heap grew by at least
// 1/memoryGrowthShare of the budget while it was in flight (77 MiB of a 2 GiB replica's).
const memoryGrowthShare = 16

type suspect struct {
	id, reason string
	run        *quarantineRun
	heap       int64 // of a suspect of the heap's growth: the live heap it was suspected at
}

// validLocked reports whether this replica's membership is valid (always, without Valid).
func (q *Quarantine) validLocked() bool { return q.cfg.Valid == nil || q.cfg.Valid() == nil }

// suspects finds the runs that misbehave now and were not suspected yet,
// and marks them so in memory; the caller writes their marks. While this
// replica's membership is not valid it finds none.
func (q *Quarantine) suspects(now time.Time) []suspect {
	heap := int64(0)
	if q.cfg.MemoryBudget > 0 {
		heap = q.cfg.HeapBytes()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	valid := q.validLocked()
	over := q.cfg.MemoryBudget > 0 && heap > q.cfg.MemoryBudget
	if over != q.pressure {
		q.pressure = over
		if over {
			q.log.Warn("the live heap is over its budget; the reconciles in flight for long under which it grew are suspects",
				"heap_mib", heap>>20, "budget_mib", q.cfg.MemoryBudget>>20, "in_flight", len(q.runs))
		}
	}
	var out []suspect
	for id, r := range q.runs {
		if r.suspect != "" || r.memory != "" {
			continue
		}
		ran := now.Sub(r.start)
		if r.slot.Err() != nil && r.lostAt.IsZero() {
			r.lostAt = now
		}
		idle := ran
		if p := r.progress.Load(); p > 0 {
			idle = now.Sub(time.Unix(0, p))
		}
		switch {
		case valid && idle > q.cfg.TimeBudget:
			r.suspect = fmt.Sprintf("its reconcile made no progress (no API request of its answered) for its time budget of %v", q.cfg.TimeBudget)
		case valid && ran > q.cfg.MaxRun:
			r.suspect = fmt.Sprintf("its reconcile ran past %v, the longest any may", q.cfg.MaxRun)
		case valid && over && ran > q.cfg.MarkAfter && heap-max(r.heap, q.floor) >= q.cfg.MemoryBudget/memoryGrowthShare:
			r.memory = fmt.Sprintf("its reconcile was in flight for %v while the replica's live heap grew by %d MiB past its budget (%d MiB of %d MiB)",
				ran.Round(time.Millisecond), (heap-max(r.heap, q.floor))>>20, heap>>20, q.cfg.MemoryBudget>>20)
			q.weighing[id] = true // its key waits from now until weigh is done
			out = append(out, suspect{id: id, reason: r.memory, run: r, heap: heap})
			continue
		case !r.lostAt.IsZero() && now.Sub(r.lostAt) > q.cfg.StuckAfter:
			r.suspect = fmt.Sprintf("its reconcile went on for %v after its slot was lost or the replica fenced", q.cfg.StuckAfter)
		default:
			continue
		}
		out = append(out, suspect{id: id, reason: r.suspect, run: r})
	}
	return out
}
