package shard

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/membership"
)

// ManagerConfig configures a Manager.
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
	Logger         hclog.Logger
	Registerer     prometheus.Registerer
}

// Manager holds this replica's share of the ring: it follows the member set,
// computes the assignment, acquires the slots assigned here and hands over
// the ones that are not, draining their work first. It implements Ownership.
type Manager struct {
	cfg     ManagerConfig
	log     hclog.Logger
	metrics *managerMetrics

	drainers  []Drainer
	listeners []Listener

	slots   atomic.Int64
	table   atomic.Pointer[[]atomic.Pointer[heldSlot]]
	session atomic.Pointer[membership.Session]
	ready   atomic.Bool

	statusMu sync.Mutex
	status   Status
}

// heldSlot is a slot this replica holds.
type heldSlot struct {
	epoch     int64 // create revision of the slot key: the fencing token
	ctx       context.Context
	cancel    context.CancelFunc
	releasing atomic.Bool
}

// Status is the Manager's view of the ring, for status pages and readiness.
type Status struct {
	ID       string
	Slots    int
	Members  []string
	Held     []int // slots held here, sorted
	Assigned int   // slots the assignment gives this replica
	Orphaned int   // slots no member holds
	Revision int64 // etcd revision of the member view
}

// NewManager validates cfg and returns a Manager; AddDrainer and AddListener
// register its peers before Run.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if cfg.Client == nil || cfg.Member == nil {
		return nil, errors.New("shard manager: an etcd client and a member are required")
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 5 * time.Second
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &Manager{cfg: cfg, log: cfg.Logger.Named("ring"), metrics: newManagerMetrics(cfg.Registerer)}, nil
}

// AddDrainer registers work to drain before a slot is handed over. Call before Run.
func (m *Manager) AddDrainer(d Drainer) { m.drainers = append(m.drainers, d) }

// AddListener registers a listener of gained and lost slots. Call before Run.
func (m *Manager) AddListener(l Listener) { m.listeners = append(m.listeners, l) }

// Slots is the ring's slot count, 0 until Run has read it.
func (m *Manager) Slots() int { return int(m.slots.Load()) }

// SlotContext implements Ownership.
func (m *Manager) SlotContext(slot int) (context.Context, bool) {
	h := m.held(slot)
	if h == nil || h.releasing.Load() || h.ctx.Err() != nil {
		return nil, false
	}
	if s := m.session.Load(); s == nil || s.Valid() != nil {
		return nil, false
	}
	return h.ctx, true
}

// Epoch returns the fencing token of a held slot: the create revision of its key.
func (m *Manager) Epoch(slot int) (int64, bool) {
	if h := m.held(slot); h != nil {
		return h.epoch, true
	}
	return 0, false
}

// Ready reports whether this replica is a live member that has read the ring.
func (m *Manager) Ready() bool { return m.ready.Load() }

// Status returns the latest view of the ring.
func (m *Manager) Status() Status {
	m.statusMu.Lock()
	defer m.statusMu.Unlock()
	st := m.status
	st.Members, st.Held = slices.Clone(st.Members), slices.Clone(st.Held)
	return st
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
	m.slots.Store(int64(slots))
	for ctx.Err() == nil {
		sess, err := m.cfg.Member.Session(ctx)
		if err != nil {
			break
		}
		m.session.Store(sess)
		newTenure(m, sess).run(ctx)
		m.ready.Store(false)
	}
	return nil
}

// resolveRing reads (or creates) the ring config, retrying while etcd is
// unreachable. A mismatched slot count is returned: retrying cannot fix it.
func (m *Manager) resolveRing(ctx context.Context) (int, error) {
	wait := 100 * time.Millisecond
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
		m.log.Warn("cannot read the ring config from etcd; will retry", "error", err, "retry_in", wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		wait = min(2*wait, 5*time.Second)
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
