package shard_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/internal/runlog"
	"github.com/ringfire/ringfire/membership"
	"github.com/ringfire/ringfire/shard"

	"github.com/ringfire/ringfire/internal/logbuf"
)

// The ring tests run members in one process over one real etcd. Each member
// has its own etcd client, so a hard kill closes that client without
// revoking anything, as a killed process would.

const (
	testPrefix = "/ringtest"
	testSlots  = 256
	testTTL    = 2 * time.Second
	testKeys   = 2000
)

// node is one ring member with a dispatcher whose handler records its runs.
type node struct {
	id      string
	client  *clientv3.Client
	member  *membership.Member
	manager *shard.Manager
	disp    *shard.Dispatcher[int]
	cancel  context.CancelFunc
	done    chan struct{}
}

type cluster struct {
	t        testing.TB
	mu       sync.Mutex // guards nodes and cut against the load goroutine
	etcd     *localetcd.Server
	endpoint string
	rec      *runlog.Log
	keys     []string
	nodes    map[string]*node
	cut      map[string]bool // members partitioned away: not expected to own slots
	observer *clientv3.Client
	log      hclog.Logger
	logs     *logbuf.Buffer // everything log wrote
}

func newCluster(t testing.TB) *cluster {
	etcd := localetcd.StartForTest(t)
	logs := &logbuf.Buffer{}
	c := &cluster{t: t, etcd: etcd, endpoint: etcd.Endpoint(), rec: &runlog.Log{}, nodes: map[string]*node{}, cut: map[string]bool{},
		log:  hclog.New(&hclog.LoggerOptions{Name: "ringtest", Level: hclog.Warn, Output: io.MultiWriter(testWriter{t}, logs)}),
		logs: logs}
	for i := range testKeys {
		c.keys = append(c.keys, fmt.Sprintf("ns-%d/job-%d", i%7, i))
	}
	c.observer = localetcd.ClientForTest(t, c.endpoint)
	t.Cleanup(c.stopAll)
	return c
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// start starts a member named id whose etcd traffic goes to endpoint.
func (c *cluster) start(id, endpoint string) *node {
	c.t.Helper()
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		c.t.Fatal(err)
	}
	mcfg := membership.DefaultConfig()
	mcfg.Client, mcfg.Prefix, mcfg.ID = client, testPrefix, id
	mcfg.SetTTL(testTTL)
	mcfg.Logger = c.log.Named(id)
	member, err := membership.New(mcfg)
	if err != nil {
		c.t.Fatal(err)
	}
	scfg := shard.DefaultManagerConfig()
	scfg.Client, scfg.Member, scfg.Prefix, scfg.Slots = client, member, testPrefix, testSlots
	scfg.DrainTimeout, scfg.Logger = 2*time.Second, c.log.Named(id)
	manager, err := shard.NewManager(scfg)
	if err != nil {
		c.t.Fatal(err)
	}
	n := &node{id: id, client: client, member: member, manager: manager, done: make(chan struct{})}
	dcfg := shard.DefaultDispatcherConfig[int]()
	dcfg.Name, dcfg.Workers, dcfg.Ownership, dcfg.Logger = "ringtest-"+id, 4, manager, c.log.Named(id)
	dcfg.Handler = func(ctx context.Context, key string, _ int) error {
		run := runlog.Run{Key: key, Replica: id, Start: time.Now()}
		select { // a short reconcile that stops when its slot is lost
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
		}
		run.End = time.Now()
		c.rec.Add(run)
		return nil
	}
	n.disp, err = shard.NewDispatcher(dcfg)
	if err != nil {
		c.t.Fatal(err)
	}
	manager.AddDrainer(n.disp)
	manager.AddListener(enqueueAll{n: n, keys: c.keys})
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); n.disp.Run(ctx) }()
	go func() { defer wg.Done(); manager.Run(ctx) }()
	go func() { wg.Wait(); close(n.done) }()
	c.mu.Lock()
	c.nodes[id] = n
	c.mu.Unlock()
	return n
}

// enqueueAll enqueues every key of a gained slot, as a controller does.
type enqueueAll struct {
	n    *node
	keys []string
}

func (e enqueueAll) SlotsGained(slots []int) {
	for _, k := range e.keys {
		if _, ok := slices.BinarySearch(slots, shard.SlotOf(k, testSlots)); ok {
			e.n.disp.Enqueue(k, 0)
		}
	}
}

func (enqueueAll) SlotsLost([]int) {}

// stop stops a member gracefully: drain, hand over, revoke.
func (c *cluster) stop(id string) {
	c.mu.Lock()
	n := c.nodes[id]
	c.mu.Unlock()
	n.cancel()
	c.wait(n)
	n.client.Close()
	c.forget(id)
}

// kill stops a member as kill -9 would: its etcd connection drops first, its
// lease is never revoked and expires after the TTL.
func (c *cluster) kill(id string) {
	c.mu.Lock()
	n := c.nodes[id]
	c.mu.Unlock()
	n.client.Close()
	n.cancel()
	c.wait(n)
	c.forget(id)
}

func (c *cluster) forget(id string) {
	c.mu.Lock()
	delete(c.nodes, id)
	c.mu.Unlock()
}

func (c *cluster) has(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id] != nil
}

func (c *cluster) setCut(id string, cut bool) {
	c.mu.Lock()
	c.cut[id] = cut
	c.mu.Unlock()
}

func (c *cluster) wait(n *node) {
	select {
	case <-n.done:
	case <-time.After(15 * time.Second):
		c.t.Fatalf("member %s did not stop within 15s", n.id)
	}
}

func (c *cluster) stopAll() {
	for _, n := range c.running()() {
		c.stop(n.id)
	}
}

// load enqueues requests for random keys on every member until ctx is done;
// each member drops the keys it does not own.
func (c *cluster) load(ctx context.Context, nodes func() []*node) {
	for i := 0; ctx.Err() == nil; i++ {
		for _, n := range nodes() {
			n.disp.Enqueue(c.keys[(i*7919)%len(c.keys)], i)
		}
		if i%50 == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Millisecond):
			}
		}
	}
}

// liveLeases maps each running member's current lease to its id.
func (c *cluster) liveLeases() map[clientv3.LeaseID]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	live := map[clientv3.LeaseID]string{}
	for id, n := range c.nodes {
		if s := n.member.Current(); s != nil {
			live[s.Lease] = id
		}
	}
	return live
}

// converged reports whether every slot is held, by the live member the
// assignment of the live members gives it to.
func (c *cluster) converged() (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.observer.Get(ctx, shard.SlotsPrefix(testPrefix), clientv3.WithPrefix())
	if err != nil {
		return false, err.Error()
	}
	live := c.liveLeases()
	c.mu.Lock()
	ids := make([]string, 0, len(c.nodes))
	for id := range c.nodes {
		if !c.cut[id] {
			ids = append(ids, id)
		}
	}
	c.mu.Unlock()
	want := shard.Assign(ids, testSlots)
	holder := map[string]string{}
	for _, kv := range resp.Kvs {
		holder[string(kv.Key)] = live[clientv3.LeaseID(kv.Lease)]
	}
	wrong := 0
	for s := range testSlots {
		if holder[fmt.Sprintf("%s%d", shard.SlotsPrefix(testPrefix), s)] != want[s] {
			wrong++
		}
	}
	return wrong == 0, fmt.Sprintf("%d of %d slots not held by their assigned live member", wrong, testSlots)
}

// awaitConverged fails the test unless the ring converges within limit of since.
func (c *cluster) awaitConverged(what string, since time.Time, limit time.Duration) time.Duration {
	c.t.Helper()
	var why string
	for {
		var ok bool
		if ok, why = c.converged(); ok {
			took := time.Since(since)
			c.t.Logf("%s: converged in %v", what, took.Round(time.Millisecond))
			return took
		}
		if time.Since(since) > limit {
			c.t.Fatalf("%s: not converged within %v: %s", what, limit, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitMemberGone waits until the member key of id is gone from etcd and
// returns when it went.
func (c *cluster) awaitMemberGone(id string, since time.Time, limit time.Duration) time.Time {
	c.t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		resp, err := c.observer.Get(ctx, testPrefix+"/members/"+id)
		cancel()
		if err == nil && len(resp.Kvs) == 0 {
			return time.Now()
		}
		if time.Since(since) > limit {
			c.t.Fatalf("member %s still in the member set %v after it was killed", id, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *cluster) assertNoOverlap() {
	c.t.Helper()
	if bad := c.rec.Overlaps(); len(bad) > 0 {
		c.t.Fatalf("%d keys were processed by two members at once, e.g.:\n%s", len(bad), bad[0])
	}
	c.t.Logf("%d handler runs recorded, no key processed by two members at once", c.rec.Count())
}
