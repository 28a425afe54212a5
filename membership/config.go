package membership

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/internal/etcdloop"
)

// Config configures a Member. Start from DefaultConfig.
type Config struct {
	// Client reaches etcd. Required.
	Client *clientv3.Client
	// Prefix is the ring's key prefix in etcd, e.g. "/ringfire". Several
	// rings can share one etcd under different prefixes.
	Prefix string
	// ID names the member: the pod name in a StatefulSet, the hostname
	// elsewhere. Unique within the ring.
	ID string
	// TTL is the lease time to live. etcd counts it in whole seconds, so it
	// must be a whole number of seconds, at least one; SetTTL rounds it and
	// sets the timings that follow from it.
	TTL time.Duration
	// KeepAliveInterval is how often the lease is renewed. Default TTL/3
	// (SetTTL).
	KeepAliveInterval time.Duration
	// FenceMargin is how long before the lease could expire at etcd the
	// member fences itself: the session ends at (send time of the last
	// successful keep-alive) + TTL - FenceMargin. Default TTL/5, at least
	// 500ms (SetTTL).
	FenceMargin time.Duration
	// RenewRetry is how soon a failed renewal is tried again, when that is
	// sooner than KeepAliveInterval; the fence deadline bounds how long this
	// goes on. Default 250ms.
	RenewRetry time.Duration
	// JoinRetry is the wait between failed attempts to join while etcd
	// cannot be reached. Default 100ms, doubling up to 5s.
	JoinRetry etcdloop.Backoff
	// Clock is where the member reads the time for its fence deadline.
	// Default: time.Now. Its readings must carry Go's monotonic clock, as
	// time.Now's do: the deadline is compared with Sub and Before only, so
	// a step of the wall clock moves nothing (a test steps it through a
	// Clock of its own; see internal/wallstep).
	Clock Clock
	// Logger receives the member's logs. Default: a null logger.
	Logger hclog.Logger
	// Registerer, when set, receives the member's metrics.
	Registerer prometheus.Registerer
}

// Defaults of Config's timings.
const (
	DefaultTTL          = 5 * time.Second
	defaultRenewRetry   = 250 * time.Millisecond
	defaultJoinRetryMin = 100 * time.Millisecond
	defaultJoinRetryMax = 5 * time.Second
	minFenceMargin      = 500 * time.Millisecond
)

// DefaultConfig returns a Config with every default filled in, the ones
// docs/design.md lists: a 5 s lease renewed every TTL/3, fenced TTL/5
// (at least 500ms) before it could expire. The caller adds Client and ID;
// SetTTL changes the lease with the timings that follow from it.
func DefaultConfig() Config {
	c := Config{
		Prefix:     "/ringfire",
		RenewRetry: defaultRenewRetry,
		JoinRetry:  etcdloop.Backoff{Min: defaultJoinRetryMin, Max: defaultJoinRetryMax},
		Clock:      systemClock{},
		Logger:     hclog.NewNullLogger(),
	}
	c.SetTTL(DefaultTTL)
	return c
}

// SetTTL sets the lease TTL, rounded to whole seconds and at least one, as
// etcd counts it, and the timings derived from it: KeepAliveInterval TTL/3
// and FenceMargin TTL/5, at least 500ms. Set either afterwards to choose
// it apart from the TTL.
func (c *Config) SetTTL(ttl time.Duration) {
	c.TTL = max(ttl, time.Second).Round(time.Second)
	c.KeepAliveInterval = c.TTL / 3
	c.FenceMargin = max(c.TTL/5, minFenceMargin)
}

// Validate reports every field of c that cannot work. It changes nothing:
// defaults come from DefaultConfig and SetTTL, not from here.
func (c *Config) Validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("an etcd client is required"))
	}
	if c.ID == "" || strings.Contains(c.ID, "/") {
		errs = append(errs, fmt.Errorf("member id %q must be non-empty and contain no '/'", c.ID))
	}
	if !strings.HasPrefix(c.Prefix, "/") || strings.HasSuffix(c.Prefix, "/") {
		errs = append(errs, fmt.Errorf("prefix %q must start with '/' and not end with one", c.Prefix))
	}
	if c.TTL < time.Second || c.TTL%time.Second != 0 {
		errs = append(errs, fmt.Errorf("TTL %v must be a whole number of seconds, at least one (etcd counts leases in seconds; SetTTL rounds)", c.TTL))
	}
	if c.KeepAliveInterval <= 0 || c.FenceMargin <= 0 || c.RenewRetry <= 0 {
		errs = append(errs, fmt.Errorf("keep-alive interval %v, fence margin %v and renew retry %v must be positive", c.KeepAliveInterval, c.FenceMargin, c.RenewRetry))
	} else if c.KeepAliveInterval >= c.TTL-c.FenceMargin {
		errs = append(errs, fmt.Errorf("keep-alive interval %v leaves no room before the fence at TTL %v minus margin %v", c.KeepAliveInterval, c.TTL, c.FenceMargin))
	}
	if c.JoinRetry.Min <= 0 || c.JoinRetry.Max < c.JoinRetry.Min {
		errs = append(errs, fmt.Errorf("join retry %v..%v must be positive and not shrink", c.JoinRetry.Min, c.JoinRetry.Max))
	}
	if c.Logger == nil {
		errs = append(errs, errors.New("a logger is required"))
	}
	if c.Clock == nil {
		errs = append(errs, errors.New("a clock is required"))
	}
	return errors.Join(errs...)
}

// Clock reads the time. The fence's timers are Go's own (time.AfterFunc):
// they count monotonic time, which no wall-clock step moves, so a Clock
// needs no timers of its own.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// MembersPrefix is where the member keys of the ring at prefix live.
func MembersPrefix(prefix string) string { return prefix + "/members/" }
