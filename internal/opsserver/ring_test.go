package opsserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/membership"
	"github.com/ringfire/ringfire/shard"
)

// heldDrain is a Drainer whose drains, once armed, wait until release is
// closed: a member with it holds the slots it hands over for as long as a
// test wants.
type heldDrain struct {
	armed   atomic.Bool
	release chan struct{}
}

func (d *heldDrain) Drain(ctx context.Context, _ []int) bool {
	if !d.armed.Load() {
		return true
	}
	select {
	case <-d.release:
		return true
	case <-ctx.Done():
		return false
	}
}

const ringTestSlots = 256

// startMember runs a shard Manager named id over etcd at endpoint until the
// test ends.
func startMember(t *testing.T, endpoint, id string, drainer shard.Drainer) *shard.Manager {
	t.Helper()
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	mcfg := membership.DefaultConfig()
	mcfg.Client, mcfg.Prefix, mcfg.ID = client, "/pagetest", id
	mcfg.SetTTL(2 * time.Second)
	member, err := membership.New(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	scfg := shard.DefaultManagerConfig()
	scfg.Client, scfg.Member, scfg.Prefix, scfg.Slots, scfg.DrainTimeout = client, member, "/pagetest", ringTestSlots, time.Minute
	m, err := shard.NewManager(scfg)
	if err != nil {
		t.Fatal(err)
	}
	if drainer != nil {
		m.AddDrainer(drainer)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Errorf("member %s did not stop within 15s", id)
		}
		client.Close()
	})
	return m
}

// servePage serves m's status page until the test ends and returns its
// URL.
func servePage(t *testing.T, m *shard.Manager) string {
	t.Helper()
	ready := func() error {
		if !m.Ready() {
			return errors.New("not a member of the ring yet")
		}
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(newStatusPage(Config{Gatherer: prometheus.NewRegistry(), Status: m.Status, Ready: ready}).serveHTML))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// waitPage reads the page every 100ms until ok accepts it, for at most
// limit, and returns the page accepted.
func waitPage(t *testing.T, url string, limit time.Duration, what string, ok func(page) bool) page {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		p := readPage(t, body)
		if ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("no page with %s within %v; last: legend %v, centre %q, %d handing over, %d unowned, waiting %q",
				what, limit, p.legend, p.moving, p.handover, p.unowned, p.waiting)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// On a real ring of three members over etcd, a fourth joins while one of
// the three cannot finish draining: the page of another member, taken in
// the middle of that handover, draws all four members, each in its colour,
// and the slots the slow member has yet to hand over as in motion.
func TestStatusPageDuringHandover(t *testing.T) {
	etcd := localetcd.StartForTest(t)
	slow := &heldDrain{release: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			close(slow.release)
			released = true
		}
	}
	t.Cleanup(release) // before the members stop: cleanups run last first
	r0 := startMember(t, etcd.Endpoint(), "r0", nil)
	startMember(t, etcd.Endpoint(), "r1", nil)
	startMember(t, etcd.Endpoint(), "r2", slow)
	url := servePage(t, r0)
	t.Cleanup(release)

	waitPage(t, url, 20*time.Second, "three members, settled", func(p page) bool {
		return len(p.legend) == 3 && p.moving == "settled" && p.cells == ringTestSlots
	})

	slow.armed.Store(true)
	startMember(t, etcd.Endpoint(), "r3", nil)
	// r0 and r1 hand their share over to r3 at once; r2's share stays
	// with r2, in motion, until its drain is released.
	p := waitPage(t, url, 20*time.Second, "r3 holding slots while r2 hands over", func(p page) bool {
		return len(p.legend) == 4 && p.cellsByFill[p.legend["r3"]] > 0 && p.handover > 0
	})
	st := r0.Status()
	for _, id := range []string{"r0", "r1", "r2", "r3"} {
		colour, ok := p.legend[id]
		if !ok {
			t.Fatalf("no legend line for %s: %v", id, p.legend)
		}
		if p.cellsByFill[colour] == 0 {
			t.Errorf("no slot drawn in %s's colour %s", id, colour)
		}
	}
	if p.thisMember != "r0" {
		t.Errorf("highlighted legend line %q, want r0", p.thisMember)
	}
	if p.toFills[p.legend["r3"]] == 0 {
		t.Errorf("no slot marked as going to r3: %v", p.toFills)
	}
	if r3 := p.cellsByFill[p.legend["r3"]]; p.movedByFill[p.legend["r3"]] != r3 {
		t.Errorf("%d of r3's %d slots marked as moved, want all: r3 has just taken them", p.movedByFill[p.legend["r3"]], r3)
	}
	slowHeld := 0
	for s, h := range st.Holders {
		if h == "r2" && st.Assignment[s] == "r3" {
			slowHeld++
		}
	}
	if slowHeld == 0 {
		t.Errorf("the Status has no slot held by r2 and assigned to r3 while r2 cannot drain")
	}
	t.Logf("mid-handover page: %d slots handing over, %d unowned, %d moved; r2 holds %d assigned to r3",
		p.handover, p.unowned, p.moved, slowHeld)

	release()
	waitPage(t, url, 20*time.Second, "four members, settled", func(p page) bool {
		return len(p.legend) == 4 && p.moving == "settled" && p.handover == 0 && p.unowned == 0
	})
}
