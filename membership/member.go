package membership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Info is the value of a member key.
type Info struct {
	ID     string           `json:"id"`
	Lease  clientv3.LeaseID `json:"lease"`
	Joined time.Time        `json:"joined"`
}

// Member keeps one replica in the ring. Create it with New, run it with Run;
// Session hands out the live session.
type Member struct {
	cfg     Config
	log     hclog.Logger
	metrics *metrics
	key     string

	mu      sync.Mutex
	current *Session      // nil while not joined
	changed chan struct{} // closed and replaced whenever current changes
	prev    clientv3.LeaseID
}

// New validates cfg and returns a Member that has not joined yet.
func New(cfg Config) (*Member, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("membership config: %w", err)
	}
	metrics, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Member{
		cfg:     cfg,
		log:     cfg.Logger.Named("member"),
		metrics: metrics,
		key:     MembersPrefix(cfg.Prefix) + cfg.ID,
		changed: make(chan struct{}),
	}, nil
}

// ID is the member's id.
func (m *Member) ID() string { return m.cfg.ID }

// Current returns the live session, or nil while the member is not joined.
func (m *Member) Current() *Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.current != nil && m.current.ctx.Err() != nil {
		return nil
	}
	return m.current
}

// Session waits for a live session and returns it, or ctx's error.
func (m *Member) Session(ctx context.Context) (*Session, error) {
	for {
		m.mu.Lock()
		s, changed := m.current, m.changed
		m.mu.Unlock()
		if s != nil && s.ctx.Err() == nil {
			return s, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (m *Member) publish(s *Session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.current = s
	close(m.changed)
	m.changed = make(chan struct{})
}

// Run joins the ring and keeps the member in it until ctx is done, then
// leaves by revoking the lease. After a fence or a lost lease it rejoins with
// a new lease; while etcd is unreachable it retries with backoff and logs why.
// It returns nil once it has left.
func (m *Member) Run(ctx context.Context) error {
	retry := m.cfg.JoinRetry
	for ctx.Err() == nil {
		s, err := m.join(ctx)
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("cannot join the ring; will retry", "error", err, "retry_in", retry.Next())
				retry.Wait(ctx)
			}
			continue
		}
		retry.Reset()
		m.metrics.sessions.Inc()
		m.metrics.joined.Set(1)
		m.log.Info("joined the ring", "lease", fmt.Sprintf("%x", int64(s.Lease)), "ttl", s.TTL)
		m.publish(s)
		m.renew(ctx, s)
		m.metrics.joined.Set(0)
		if ctx.Err() != nil {
			s.end(ErrLeft)
			m.leave(s)
			return nil
		}
		m.log.Warn("session ended; rejoining with a new lease", "reason", context.Cause(s.ctx))
	}
	return nil
}

// join waits until no other lease holds this member's key, grants a lease
// and registers the member key under it.
func (m *Member) join(ctx context.Context) (*Session, error) {
	if err := m.awaitFreeKey(ctx); err != nil {
		return nil, err
	}
	ttl := int64(math.Ceil(m.cfg.TTL.Seconds()))
	sent := m.cfg.Clock.Now()
	rctx, cancel := context.WithTimeout(ctx, m.cfg.KeepAliveInterval)
	defer cancel()
	grant, err := m.cfg.Client.Grant(rctx, ttl)
	if err != nil {
		return nil, fmt.Errorf("grant lease: %w", err)
	}
	granted := time.Duration(grant.TTL) * time.Second
	s := newSession(m.cfg.ID, grant.ID, granted, m.cfg.Clock, sent.Add(granted-m.cfg.FenceMargin), func() {
		m.metrics.fences.Inc()
		m.log.Error("fencing: lease not renewed in time; stopped all work before it can expire at etcd",
			"lease", fmt.Sprintf("%x", int64(grant.ID)))
	})
	val, _ := json.Marshal(Info{ID: m.cfg.ID, Lease: grant.ID, Joined: time.Now().UTC()})
	txn, err := m.cfg.Client.Txn(rctx).
		If(clientv3.Compare(clientv3.CreateRevision(m.key), "=", 0)).
		Then(clientv3.OpPut(m.key, string(val), clientv3.WithLease(grant.ID))).
		Commit()
	if err == nil && !txn.Succeeded {
		err = errors.New("member key taken by another lease meanwhile")
	}
	if err != nil {
		m.revoke(grant.ID)
		return nil, fmt.Errorf("register %s: %w", m.key, err)
	}
	m.mu.Lock()
	m.prev = grant.ID
	m.mu.Unlock()
	return s, nil
}

// awaitFreeKey returns once the member key is free. A key held by this
// process's previous lease (after a fence) is freed by revoking that lease:
// everything tied to it has stopped already. A key held by a lease this
// process does not know (an earlier run of this replica, killed, or a second
// replica with the same id) is waited out: it goes when that lease expires.
func (m *Member) awaitFreeKey(ctx context.Context) error {
	for {
		rctx, cancel := context.WithTimeout(ctx, m.cfg.KeepAliveInterval)
		resp, err := m.cfg.Client.Get(rctx, m.key)
		cancel()
		if err != nil {
			return fmt.Errorf("read %s: %w", m.key, err)
		}
		if len(resp.Kvs) == 0 {
			return nil
		}
		holder := clientv3.LeaseID(resp.Kvs[0].Lease)
		m.mu.Lock()
		prev := m.prev
		m.mu.Unlock()
		if holder == prev {
			m.revoke(holder)
			continue
		}
		m.log.Warn("member key is held by another lease: an earlier run of this replica, or another replica with the same id; waiting for it to expire",
			"key", m.key, "lease", fmt.Sprintf("%x", int64(holder)))
		wctx, cancel := context.WithTimeout(ctx, m.cfg.TTL+time.Second)
		wch := m.cfg.Client.Watch(clientv3.WithRequireLeader(wctx), m.key, clientv3.WithRev(resp.Header.Revision+1))
		for wr := range wch {
			if wr.Err() != nil || deleted(wr) {
				break
			}
		}
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

func deleted(wr clientv3.WatchResponse) bool {
	for _, ev := range wr.Events {
		if ev.Type == clientv3.EventTypeDelete {
			return true
		}
	}
	return false
}

// renew keeps the session's lease alive until ctx is done, the lease is
// lost, or the session's own fence timer ends it.
func (m *Member) renew(ctx context.Context, s *Session) {
	next := time.NewTimer(m.cfg.KeepAliveInterval)
	defer next.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.Done():
			return
		case <-next.C:
			ok, lost := m.keepAliveOnce(ctx, s)
			if lost {
				m.metrics.fences.Inc()
				m.log.Error("lease lost at etcd; stopping all work", "lease", fmt.Sprintf("%x", int64(s.Lease)))
				s.end(ErrLeaseLost)
				return
			}
			wait := m.cfg.KeepAliveInterval
			if !ok { // retry sooner; the fence timer bounds how long this may go on
				wait = min(wait, m.cfg.RenewRetry)
			}
			next.Reset(wait)
		}
	}
}

// keepAliveOnce renews the lease once. On success the fence deadline moves to
// the send time plus the TTL minus the margin: etcd received the request
// after it was sent, so its own expiry is later still.
func (m *Member) keepAliveOnce(ctx context.Context, s *Session) (ok, lost bool) {
	sent := m.cfg.Clock.Now()
	rctx, cancel := context.WithTimeout(s.Context(), m.cfg.KeepAliveInterval)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	resp, err := m.cfg.Client.KeepAliveOnce(rctx, s.Lease)
	took := m.cfg.Clock.Now().Sub(sent).Seconds()
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		m.metrics.keepAlive.WithLabelValues("lost").Observe(took)
		return false, true
	case err != nil:
		m.metrics.keepAlive.WithLabelValues("error").Observe(took)
		if ctx.Err() == nil {
			m.log.Warn("lease keep-alive failed", "error", err, "fence_in", s.left().Round(time.Millisecond))
		}
		return false, false
	case resp.TTL <= 0:
		m.metrics.keepAlive.WithLabelValues("lost").Observe(took)
		return false, true
	}
	m.metrics.keepAlive.WithLabelValues("ok").Observe(took)
	s.extend(sent.Add(time.Duration(resp.TTL)*time.Second - m.cfg.FenceMargin))
	return true, false
}

// Withdraw deletes the member key of the live session while keeping its
// lease: the other members take this one out of the assignment at once,
// while its slot keys stay held until it releases them. Used on graceful stop.
func (m *Member) Withdraw(ctx context.Context) error {
	s := m.Current()
	if s == nil {
		return nil
	}
	_, err := m.cfg.Client.Txn(ctx).
		If(clientv3.Compare(clientv3.LeaseValue(m.key), "=", s.Lease)).
		Then(clientv3.OpDelete(m.key)).
		Commit()
	if err != nil {
		return fmt.Errorf("withdraw %s: %w", m.key, err)
	}
	return nil
}

func (m *Member) leave(s *Session) {
	m.revoke(s.Lease)
	m.log.Info("left the ring", "lease", fmt.Sprintf("%x", int64(s.Lease)))
}

// revoke drops a lease and every key attached to it, best effort: a lease
// that cannot be revoked expires by itself within its TTL.
func (m *Member) revoke(lease clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.KeepAliveInterval)
	defer cancel()
	if _, err := m.cfg.Client.Revoke(ctx, lease); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		m.log.Warn("cannot revoke lease; it expires by itself", "lease", fmt.Sprintf("%x", int64(lease)), "error", err)
	}
}
