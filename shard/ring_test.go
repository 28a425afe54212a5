package shard_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/faultproxy"
	"github.com/ringfire/ringfire/membership"
	"github.com/ringfire/ringfire/shard"
)

// converge bounds how long after a membership change every slot must have
// its live owner again (docs/design.md, invariant 2).
const converge = testTTL + time.Second

func (c *cluster) running() func() []*node {
	return func() []*node {
		c.mu.Lock()
		defer c.mu.Unlock()
		nodes := make([]*node, 0, len(c.nodes))
		for _, n := range c.nodes {
			nodes = append(nodes, n)
		}
		return nodes
	}
}

// Members join, leave gracefully and are killed at random under load; no key
// is ever processed by two members at once, and after each change every
// slot has its live owner within TTL + 1 s.
func TestRingChurn(t *testing.T) {
	c := newCluster(t)
	for _, id := range []string{"m0", "m1", "m2"} {
		c.start(id, c.endpoint)
	}
	c.awaitConverged("start", time.Now(), 10*time.Second)

	ctx, stopLoad := context.WithCancel(context.Background())
	loadDone := make(chan struct{})
	go func() { defer close(loadDone); c.load(ctx, c.running()) }()

	rng := rand.New(rand.NewPCG(7, 11))
	names := []string{"m0", "m1", "m2", "m3", "m4"}
	deadline := time.Now().Add(40 * time.Second)
	for step := 0; step < 12 && time.Now().Before(deadline); step++ {
		var running, idle []string
		for _, id := range names {
			if c.has(id) {
				running = append(running, id)
			} else {
				idle = append(idle, id)
			}
		}
		at := time.Now()
		switch op := rng.IntN(3); {
		case op == 0 && len(idle) > 0 || len(running) <= 2:
			id := idle[rng.IntN(len(idle))]
			c.start(id, c.endpoint)
			c.awaitConverged("join "+id, at, converge)
		case op == 1:
			id := running[rng.IntN(len(running))]
			c.stop(id)
			c.awaitConverged("leave "+id, at, converge) // how fast: BenchmarkFailover
		default:
			id := running[rng.IntN(len(running))]
			c.kill(id)
			// A killed member stays in the member set until its lease
			// expires at etcd: that expiry is the membership change.
			gone := c.awaitMemberGone(id, at, testTTL+3*time.Second)
			c.awaitConverged("kill "+id, gone, converge)
		}
	}
	stopLoad()
	<-loadDone
	c.assertNoOverlap()
}

// A member cut off from etcd fences itself before its lease expires, the
// others take its slots, and it rejoins with a new lease after the cut heals.
func TestRingPartition(t *testing.T) {
	c := newCluster(t)
	proxy, err := faultproxy.New(strings.TrimPrefix(c.endpoint, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	c.start("a", c.endpoint)
	c.start("b", c.endpoint)
	p := c.start("p", "http://"+proxy.Addr())
	c.awaitConverged("start", time.Now(), 10*time.Second)
	before := p.member.Current()
	if before == nil {
		t.Fatal("partitioned member has no session before the cut")
	}

	ctx, stopLoad := context.WithCancel(context.Background())
	loadDone := make(chan struct{})
	go func() { defer close(loadDone); c.load(ctx, c.running()) }()

	at := time.Now()
	proxy.Cut()
	c.setCut("p", true)
	select {
	case <-before.Done():
	case <-time.After(converge):
		t.Fatalf("cut-off member did not fence within %v", converge)
	}
	if !errors.Is(context.Cause(before.Context()), membership.ErrFenced) {
		t.Fatalf("session ended with %v, want a fence", context.Cause(before.Context()))
	}
	for i := 0; len(p.manager.Status().Held) > 0; i++ {
		if i == 100 {
			t.Fatalf("fenced member still holds %d slots in its own view after 1s", len(p.manager.Status().Held))
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.awaitConverged("cut p", c.awaitMemberGone("p", at, testTTL+3*time.Second), converge)

	at = time.Now()
	proxy.Heal()
	c.setCut("p", false)
	c.awaitConverged("heal p", at, converge+testTTL) // rejoining waits out the old lease
	if after := p.member.Current(); after == nil || after.Lease == before.Lease {
		t.Fatal("member did not rejoin with a new lease")
	}
	stopLoad()
	<-loadDone
	c.assertNoOverlap()
}

// etcd restarted under the members, briefly and then for longer than the
// TTL: the members keep running, re-establish, and the invariants hold.
func TestRingEtcdRestart(t *testing.T) {
	c := newCluster(t)
	for _, id := range []string{"a", "b", "c"} {
		c.start(id, c.endpoint)
	}
	c.awaitConverged("start", time.Now(), 10*time.Second)
	ctx, stopLoad := context.WithCancel(context.Background())
	loadDone := make(chan struct{})
	go func() { defer close(loadDone); c.load(ctx, c.running()) }()

	for _, down := range []time.Duration{200 * time.Millisecond, testTTL + time.Second} {
		c.etcd.Stop()
		time.Sleep(down)
		if err := c.etcd.Restart(); err != nil {
			t.Fatal(err)
		}
		at := time.Now()
		// Not a membership change: members that fenced while etcd was away
		// rejoin, and slot keys of leases they could not revoke expire first.
		c.awaitConverged("etcd back after "+down.String(), at, 4*testTTL+5*time.Second)
	}
	stopLoad()
	<-loadDone
	for id, n := range c.nodes {
		if !n.manager.Ready() {
			t.Errorf("member %s not ready after etcd came back", id)
		}
	}
	c.assertNoOverlap()
}

// A replica started while etcd is unreachable keeps running, reports
// not-ready, logs why, and joins by itself once etcd answers (docs/design.md,
// invariant 9): no crash loop.
func TestRingStartsBeforeEtcd(t *testing.T) {
	c := newCluster(t)
	c.etcd.Stop()
	n := c.start("early", c.endpoint)
	time.Sleep(2 * testTTL)
	select {
	case <-n.done:
		t.Fatal("the member stopped while etcd was unreachable; it must keep retrying")
	default:
	}
	if n.manager.Ready() {
		t.Error("the member reports ready with etcd unreachable")
	}
	if logs := c.logs.String(); !strings.Contains(logs, "will retry") {
		t.Errorf("nothing in the log says why the member is not in the ring; the log:\n%s", logs)
	}
	if err := c.etcd.Restart(); err != nil {
		t.Fatal(err)
	}
	c.awaitConverged("etcd up after the member started", time.Now(), 4*testTTL+5*time.Second)
	if !n.manager.Ready() {
		t.Error("the member is not ready after etcd came up")
	}
}

// The slot count is fixed at ring creation: a replica asking for another
// gets an error that says what to do.
func TestRingSlotCountIsImmutable(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	if n, err := shard.EnsureRing(ctx, c.observer, testPrefix, 512); err != nil || n != 512 {
		t.Fatalf("create ring: %d, %v", n, err)
	}
	if n, err := shard.EnsureRing(ctx, c.observer, testPrefix, 0); err != nil || n != 512 {
		t.Fatalf("join with 0: %d, %v", n, err)
	}
	_, err := shard.EnsureRing(ctx, c.observer, testPrefix, 1024)
	if !errors.Is(err, shard.ErrRingConfig) || !strings.Contains(err.Error(), "--slots=512") {
		t.Fatalf("mismatched slot count: %v", err)
	}
}
