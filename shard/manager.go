package shard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/internal/etcdloop"
	"github.com/ringfire/ringfire/membership"
)

// ManagerConfig configures a Manager. Start from DefaultManagerConfig.
type ManagerConfig struct {
	// Client reaches etcd; Member is this replica's membership over it.
	Client *clientv3.Client
	Member *membership.Member
	// Prefix is the ring's key prefix, the same as the Member's.
	Prefix string
	// Slots is the slot count to create the ring with; 0 takes the ring's
	// count, or DefaultSlots for a new ring.
	Slots int
	// DrainTimeout bounds how long in-flight work of a slot being handed
	// over may run on before it is cancelled. Default 5s.
	DrainTimeout time.Duration
	// RequestTimeout bounds each etcd request. Default 5s.
	RequestTimeout time.Duration
	// Timings are the Manager's other waits. Default DefaultTimings.
	Timings Timings
	// Logger receives the Manager's logs. Default: a null logger.
	Logger hclog.Logger
	// Registerer, when set, receives the Manager's metrics.
	Registerer prometheus.Registerer
}

// DefaultManagerConfig returns a ManagerConfig with every default filled
// in; the caller adds Client, Member and Prefix.
func DefaultManagerConfig() ManagerConfig {
	return ManagerConfig{
		DrainTimeout:   5 * time.Second,
		RequestTimeout: 5 * time.Second,
		Timings:        DefaultTimings(),
		Logger:         hclog.NewNullLogger(),
	}
}

// Validate reports every field of c that cannot work. It changes nothing.
func (c *ManagerConfig) Validate() error {
	var errs []error
	if c.Client == nil || c.Member == nil {
		errs = append(errs, errors.New("an etcd client and a member are required"))
	}
	if c.Slots < 0 {
		errs = append(errs, fmt.Errorf("slots %d: must not be negative (0 takes the ring's count)", c.Slots))
	}
	if c.DrainTimeout <= 0 || c.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("drain timeout %v and request timeout %v must be positive", c.DrainTimeout, c.RequestTimeout))
	}
	if err := c.Timings.validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Logger == nil {
		errs = append(errs, errors.New("a logger is required"))
	}
	return errors.Join(errs...)
}

// Timings are the waits of the handover protocol besides DrainTimeout and
// RequestTimeout. docs/design.md lists them with their defaults.
type Timings struct {
	// Recheck is how often a tenure compares the assignment with the slots
	// held when no event comes. Default 500ms.
	Recheck time.Duration
	// RetryDelay is how long a tenure waits after a failed acquire or a
	// failed delete of slot keys before it tries either again. Default 250ms.
	RetryDelay time.Duration
	// CancelGrace is how long work cancelled at the drain timeout may take
	// to return before its slots are handed over all the same. Default 1s.
	CancelGrace time.Duration
	// WatchRetry is the wait between failed full reads of the slot keys.
	// Default 50ms, doubling up to 2s (the member set's watch has the same
	// defaults, from etcdloop).
	WatchRetry etcdloop.Backoff
	// RingRetry is the wait between failed reads of the ring config at
	// start. Default 100ms, doubling up to 5s.
	RingRetry etcdloop.Backoff
}

// DefaultTimings returns the Timings a zero field takes.
func DefaultTimings() Timings {
	return Timings{
		Recheck:     500 * time.Millisecond,
		RetryDelay:  250 * time.Millisecond,
		CancelGrace: time.Second,
		WatchRetry:  etcdloop.Backoff{Min: etcdloop.DefaultRetryMin, Max: etcdloop.DefaultRetryMax},
		RingRetry:   etcdloop.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second},
	}
}

// validate reports a wait of t that is not positive, or a backoff that shrinks.
func (t Timings) validate() error {
	if t.Recheck <= 0 || t.RetryDelay <= 0 || t.CancelGrace <= 0 {
		return fmt.Errorf("timings: recheck %v, retry delay %v and cancel grace %v must be positive", t.Recheck, t.RetryDelay, t.CancelGrace)
	}
	for _, b := range []struct {
		name string
		b    etcdloop.Backoff
	}{{"watch retry", t.WatchRetry}, {"ring retry", t.RingRetry}} {
		if b.b.Min <= 0 || b.b.Max < b.b.Min {
			return fmt.Errorf("timings: %s %v..%v must be positive and not shrink", b.name, b.b.Min, b.b.Max)
		}
	}
	return nil
}

// Manager holds this replica's share of the ring: it follows the member set,
// computes the assignment, acquires the slots assigned here and hands over
// the ones that are not, draining their work first. It implements Ownership.
type Manager struct {
	cfg     ManagerConfig
	log     hclog.Logger
	metrics *managerMetrics
	store   ringStore // every etcd request of a tenure goes through it

	drainers  []Drainer
	listeners []Listener

	slots   atomic.Int64
	table   atomic.Pointer[[]atomic.Pointer[heldSlot]]
	session atomic.Pointer[membership.Session]
	ready   atomic.Bool

	statusMu sync.Mutex
	status   Status
	view     atomic.Pointer[ringView] // set by Run once the slot count is known
}

// heldSlot is a slot this replica holds.
type heldSlot struct {
	// epoch is the create revision of the slot key: it tells this tenure of the slot from
	// earlier and later ones (a delete retried for an old key never touches a new one). It is
	// not what fences writes to the API server; the lease deadline is (Valid, FenceWrites).
	epoch     int64
	ctx       context.Context
	cancel    context.CancelFunc
	releasing atomic.Bool
}

// Status is the Manager's view of the ring, for status pages and readiness.
type Status struct {
	ID      string
	Slots   int
	Members []string
	Held    []int // slots held here, sorted
	// InDoubt are the slots held here while the lease is in doubt (its fence
	// deadline passed, the renewal not answered yet): no handler starts on
	// them and no write goes out until the lease is renewed, or the session
	// ends and they go. Reported apart from Held, for another replica may
	// already hold them over the expired lease.
	InDoubt  []int
	Assigned int   // slots the assignment gives this replica
	Orphaned int   // slots no member holds
	Revision int64 // etcd revision of the member view
	// Holders is the member holding each slot, "" when it is free; nil
	// until the slot keys have been read. A holder may have left the member
	// set already and still be draining.
	Holders []string
	// Assignment is the member the assignment gives each slot to; nil until
	// the first member view. Where it differs from Holders, the slot is
	// being handed over (or is free).
	Assignment []string
	// Moved are the slots whose holder changed within MovedWithin, sorted.
	Moved []int
}

// NewManager validates cfg and returns a Manager; AddDrainer and AddListener
// register its peers before Run.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("shard manager: %w", err)
	}
	log := cfg.Logger.Named("ring")
	store := &etcdStore{client: cfg.Client, member: cfg.Member, prefix: cfg.Prefix,
		requestTimeout: cfg.RequestTimeout, watchRetry: cfg.Timings.WatchRetry, log: log}
	metrics, err := newManagerMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Manager{cfg: cfg, log: log, metrics: metrics, store: store}, nil
}

// AddDrainer registers work to drain before a slot is handed over. Call before Run.
func (m *Manager) AddDrainer(d Drainer) { m.drainers = append(m.drainers, d) }

// AddListener registers a listener of gained and lost slots. Call before Run.
func (m *Manager) AddListener(l Listener) { m.listeners = append(m.listeners, l) }

// Slots is the ring's slot count, 0 until Run has read it.
func (m *Manager) Slots() int { return int(m.slots.Load()) }

// SlotContext implements Ownership. A slot stays held while its lease is in doubt (the
// fence deadline passed, the renewal not answered yet): work on it is accepted and may run,
// and its writes wait (Guard refuses them, a transient error) until the lease is renewed, or
// the session ends and with it every slot's context. Refusing the work instead would drop it
// for good when the renewal comes late: nothing tells the slot's keys again, since the slot
// was never lost.
func (m *Manager) SlotContext(slot int) (context.Context, bool) {
	h := m.held(slot)
	if h == nil || h.releasing.Load() || h.ctx.Err() != nil {
		return nil, false
	}
	return h.ctx, true
}

// epoch returns the create revision of a held slot's key, which tells this tenure of the slot
// from earlier and later ones. Writes are fenced by the lease deadline (Valid), not by it.
func (m *Manager) epoch(slot int) (int64, bool) {
	if h := m.held(slot); h != nil {
		return h.epoch, true
	}
	return 0, false
}

// Ready reports whether this replica is a live member that has read the ring.
func (m *Manager) Ready() bool { return m.ready.Load() }

// Status returns the latest view of the ring. It copies every slot's holder
// and assignee: a status page's request pays for it, not every ring event.
func (m *Manager) Status() Status {
	m.statusMu.Lock()
	st := m.status
	m.statusMu.Unlock()
	st.Members, st.Held = slices.Clone(st.Members), slices.Clone(st.Held)
	if v := m.view.Load(); v != nil {
		v.fill(&st, time.Now())
	}
	inDoubt(&st, m.Valid())
	return st
}

// inDoubt moves the held slots to InDoubt when the lease is not valid: a
// replica acts on none of them then, and a reader of its status (a status
// page, an audit of who holds what) must not count them held twice when
// another replica has taken them over the lease that ran out.
func inDoubt(st *Status, valid error) {
	if valid != nil && len(st.Held) > 0 {
		st.InDoubt, st.Held = st.Held, nil
	}
}

func (m *Manager) held(slot int) *heldSlot {
	t := m.table.Load()
	if t == nil || slot < 0 || slot >= len(*t) {
		return nil
	}
	return (*t)[slot].Load()
}

// Run follows the ring until ctx is done, then hands every slot over
// gracefully: it withdraws the member, drains all work and leaves, so the
// other members take the slots at once. It runs the Member too.
func (m *Manager) Run(ctx context.Context) error {
	memberCtx, stopMember := context.WithCancel(context.WithoutCancel(ctx))
	memberDone := make(chan struct{})
	go func() { defer close(memberDone); m.cfg.Member.Run(memberCtx) }()
	defer func() { stopMember(); <-memberDone }()

	slots, err := m.resolveRing(ctx)
	if err != nil {
		return err
	}
	table := make([]atomic.Pointer[heldSlot], slots)
	m.table.Store(&table)
	m.view.Store(newRingView(slots))
	m.slots.Store(int64(slots))
	for ctx.Err() == nil {
		sess, err := m.cfg.Member.Session(ctx)
		if err != nil {
			break
		}
		m.session.Store(sess)
		m.newTenure(sess).run(ctx)
		m.ready.Store(false)
	}
	return nil
}

// newTenure gives a tenure for sess what it needs of the Manager.
func (m *Manager) newTenure(sess *membership.Session) *tenure {
	return &tenure{
		id: sess.ID, lease: sess.Lease, ctx: sess.Context(), slots: m.Slots(),
		store: m.store, table: *m.table.Load(),
		drainTimeout: m.cfg.DrainTimeout, timings: m.cfg.Timings,
		drain: m.drain, listeners: m.listeners, report: m.report, view: m.view.Load(),
		log: m.log, metrics: m.metrics,
		holders:    map[int]keyHolder{},
		freeSince:  map[int]time.Time{},
		acquiring:  map[int]bool{},
		discarding: map[int]int64{},
		deleted:    map[int]int64{},
		results:    make(chan opResult),
	}
}

// drain waits for every drainer to have no work in flight on the slots.
func (m *Manager) drain(ctx context.Context, slots []int) bool {
	var wg sync.WaitGroup
	ok := make([]bool, len(m.drainers))
	for i, d := range m.drainers {
		wg.Add(1)
		go func() { defer wg.Done(); ok[i] = d.Drain(ctx, slots) }()
	}
	wg.Wait()
	return !slices.Contains(ok, false)
}

// report stores a tenure's status and readiness.
func (m *Manager) report(st Status, ready bool) {
	m.statusMu.Lock()
	m.status = st
	m.statusMu.Unlock()
	m.ready.Store(ready)
}

// resolveRing reads (or creates) the ring config, retrying while etcd is
// unreachable. A mismatched slot count is returned: retrying cannot fix it.
func (m *Manager) resolveRing(ctx context.Context) (int, error) {
	retry := m.cfg.Timings.RingRetry
	for {
		rctx, cancel := context.WithTimeout(ctx, m.cfg.RequestTimeout)
		slots, err := EnsureRing(rctx, m.cfg.Client, m.cfg.Prefix, m.cfg.Slots)
		cancel()
		if err == nil {
			m.log.Info("ring", "prefix", m.cfg.Prefix, "slots", slots)
			return slots, nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if errors.Is(err, ErrRingConfig) { // retrying cannot fix it
			return 0, err
		}
		m.log.Warn("cannot read the ring config from etcd; will retry", "error", err, "retry_in", retry.Next())
		if !retry.Wait(ctx) {
			return 0, ctx.Err()
		}
	}
}

// Valid reports an error unless this replica holds a live, unexpired
// membership session right now. Writers call it right before each write:
// after a pause (a long GC, SIGSTOP) it fails even before the fence timer
// has run.
func (m *Manager) Valid() error {
	s := m.session.Load()
	if s == nil {
		return errors.New("no membership session")
	}
	return s.Valid()
}
