package membership_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/internal/faultproxy"
	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/internal/wallstep"
	"github.com/ringfire/ringfire/membership"
)

const prefix = "/test"

func startMember(t *testing.T, client *clientv3.Client, id string, ttl time.Duration, clock ...membership.Clock) (*membership.Member, context.CancelFunc, <-chan struct{}) {
	t.Helper()
	cfg := membership.DefaultConfig()
	cfg.Client, cfg.Prefix, cfg.ID = client, prefix, id
	cfg.SetTTL(ttl)
	cfg.FenceMargin = ttl / 2 // room for a loaded test machine between the fence and the check
	if len(clock) > 0 {
		cfg.Clock = clock[0]
	}
	m, err := membership.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return m, cancel, done
}

func waitSession(t *testing.T, m *membership.Member, within time.Duration) *membership.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	s, err := m.Session(ctx)
	if err != nil {
		t.Fatalf("%s: no session within %v", m.ID(), within)
	}
	return s
}

func waitView(t *testing.T, w *membership.Watcher, want []string) membership.View {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		v, ok, ch := w.Latest()
		if ok && slices.Equal(v.IDs(), want) {
			return v
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("member view %v, want %v", v.IDs(), want)
		}
	}
}

func TestJoinWatchLeave(t *testing.T) {
	etcd := localetcd.StartForTest(t)
	client := localetcd.ClientForTest(t, etcd.Endpoint())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := membership.Watch(ctx, client, prefix, nil)

	a, _, _ := startMember(t, client, "a", 2*time.Second)
	b, stopB, doneB := startMember(t, client, "b", 2*time.Second)
	sa, sb := waitSession(t, a, 5*time.Second), waitSession(t, b, 5*time.Second)
	if sa.Lease == sb.Lease {
		t.Fatal("members share a lease")
	}
	v := waitView(t, w, []string{"a", "b"})
	if v.Revision == 0 || v.Members[1].Lease != sb.Lease {
		t.Fatalf("view %+v does not carry revision and lease", v)
	}

	// Leaving revokes the lease: the member key goes at once, not after the TTL.
	left := time.Now()
	stopB()
	<-doneB
	waitView(t, w, []string{"a"})
	if took := time.Since(left); took > time.Second {
		t.Errorf("leave took %v to show; want well under the TTL", took)
	}
	if !errors.Is(context.Cause(sb.Context()), membership.ErrLeft) {
		t.Errorf("session cause %v, want ErrLeft", context.Cause(sb.Context()))
	}
	if _, err := client.TimeToLive(ctx, sb.Lease); err != nil {
		t.Fatal(err)
	}
}

// A member cut off from etcd ends its session before its lease expires at
// etcd, and rejoins with a new lease once the cut heals.
func TestFenceBeforeLeaseExpires(t *testing.T) {
	etcd := localetcd.StartForTest(t)
	direct := localetcd.ClientForTest(t, etcd.Endpoint())
	proxy, err := faultproxy.New(etcd.Endpoint()[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	viaProxy := localetcd.ClientForTest(t, "http://"+proxy.Addr())

	m, _, _ := startMember(t, viaProxy, "cut", 4*time.Second)
	s := waitSession(t, m, 5*time.Second)

	proxy.Cut()
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("member did not fence within 10s of the cut")
	}
	fencedAt := time.Now()
	if !errors.Is(context.Cause(s.Context()), membership.ErrFenced) {
		t.Fatalf("session ended with %v, want ErrFenced", context.Cause(s.Context()))
	}
	if err := s.Valid(); err == nil {
		t.Fatal("a fenced session reports itself valid")
	}
	// The fence came first: etcd still holds the lease.
	ttl, err := direct.TimeToLive(context.Background(), s.Lease)
	if err != nil {
		t.Fatal(err)
	}
	if ttl.TTL < 0 { // etcd says -1 for a lease it no longer has; 0 is "under a second left"
		t.Fatalf("lease already expired at etcd when the member fenced (TTL %d)", ttl.TTL)
	}

	proxy.Heal()
	s2 := waitSession(t, m, 15*time.Second)
	if s2.Lease == s.Lease {
		t.Fatal("rejoined under the fenced lease")
	}
	t.Logf("rejoined %v after the fence", time.Since(fencedAt).Round(time.Millisecond))
}

// A member cut off from etcd whose wall clock steps, back or forward by a
// minute, just after the cut fences as if it had not: after its deadline on
// the monotonic clock, and before etcd lets the lease expire. Valid does not
// fail before the deadline either.
func TestFenceBeforeLeaseExpiresWhateverTheWallClock(t *testing.T) {
	etcd := localetcd.StartForTest(t)
	direct := localetcd.ClientForTest(t, etcd.Endpoint())
	for i, step := range []time.Duration{-time.Minute, time.Minute} {
		t.Run(fmt.Sprintf("step %v", step), func(t *testing.T) {
			proxy, err := faultproxy.New(etcd.Endpoint()[len("http://"):])
			if err != nil {
				t.Fatal(err)
			}
			defer proxy.Close()
			viaProxy := localetcd.ClientForTest(t, "http://"+proxy.Addr())
			clock, err := wallstep.New()
			if err != nil {
				t.Fatal(err)
			}
			m, _, _ := startMember(t, viaProxy, fmt.Sprintf("step%d", i), 2*time.Second, clock)
			s := waitSession(t, m, 5*time.Second)

			proxy.Cut()
			clock.Set(step)
			cut := time.Now()
			// The deadline only moves later, and is read before Valid: if
			// Valid fails while the clock is still before it, it failed early.
			deadline := s.Deadline()
			if err := s.Valid(); err != nil && time.Now().Before(deadline) {
				t.Errorf("Valid = %v %v before the deadline", err, time.Until(deadline))
			}
			select {
			case <-s.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("member did not fence within 10s of the cut")
			}
			fencedAt := time.Now()
			if !errors.Is(context.Cause(s.Context()), membership.ErrFenced) {
				t.Fatalf("session ended with %v, want ErrFenced", context.Cause(s.Context()))
			}
			if early := s.Deadline().Sub(fencedAt); early > 0 {
				t.Errorf("fenced %v before the deadline", early)
			}
			ttl, err := direct.TimeToLive(context.Background(), s.Lease)
			if err != nil {
				t.Fatal(err)
			}
			if ttl.TTL < 0 {
				t.Fatalf("lease already expired at etcd when the member fenced (TTL %d)", ttl.TTL)
			}
			t.Logf("fenced %v after the cut, %v after the deadline", fencedAt.Sub(cut).Round(time.Millisecond),
				fencedAt.Sub(s.Deadline()).Round(time.Millisecond))
		})
	}
}

// A replica restarted under the same id waits for its earlier run's lease
// rather than taking over a key another process may still hold.
func TestSameIDWaitsForEarlierLease(t *testing.T) {
	etcd := localetcd.StartForTest(t)
	client := localetcd.ClientForTest(t, etcd.Endpoint())
	ctx := context.Background()
	old, err := client.Grant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Put(ctx, prefix+"/members/r", "{}", clientv3.WithLease(old.ID)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	m, _, _ := startMember(t, client, "r", 2*time.Second)
	s := waitSession(t, m, 10*time.Second)
	if s.Lease == old.ID {
		t.Fatal("joined under the earlier lease")
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("joined after %v while the earlier lease was alive", took)
	}
}
