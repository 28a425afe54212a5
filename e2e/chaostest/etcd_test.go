package chaostest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/internal/faultproxy"
)

// The ring's etcd fails under load: first one replica is cut off from it (a partition
// through a fault proxy) for three lease TTLs, then etcd itself is restarted. The cut-off
// replica fences itself and says it is not ready; the others take its slots within TTL + 1 s;
// healed, it rejoins and takes its share back; after the restart every replica is back in
// the ring. Every Job completes, no pod is created twice, no Job is reconciled by two
// replicas at once.
func TestRingEtcdFaultsUnderLoad(t *testing.T) {
	const ttl = 2 * time.Second // the stack's
	s := stack.Start(t, stack.Options{Replicas: 2, Nodes: 4, StandIn: true, LeaseTTL: ttl})
	proxy, err := faultproxy.New(strings.TrimPrefix(s.Ring.Endpoint(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	s.StartReplicaVia("r2", "http://"+proxy.Addr())
	settle(t, s, ttl)

	pods := watchPodCreations(t, s)
	l := startLoad(t, s, "etcdfault", 150, 100*time.Millisecond)
	time.Sleep(3 * time.Second) // Jobs being created and running

	cut := time.Now()
	proxy.Cut()
	stack.WaitFor(t, "the cut-off replica says it is not ready", 2*ttl+5*time.Second, func() (bool, string) {
		err := s.Ready("r2")
		return err != nil, "ready"
	})
	notReady := time.Since(cut)
	// The others hold every slot once r2's lease is gone: the ring without r2 settles.
	stack.WaitFor(t, "r0 and r1 hold every slot", ttl+time.Second+settleMargin, func() (bool, string) {
		held := 0
		for _, id := range []string{"r0", "r1"} {
			if r := s.Replica(id); r != nil {
				held += len(r.Manager.Status().Held)
			}
		}
		return held == stack.Slots, fmt.Sprintf("%d slots held by r0 and r1", held)
	})
	takenOver := time.Since(cut)
	time.Sleep(3*ttl - takenOver) // the partition lasts three TTLs
	proxy.Heal()
	healed := time.Now()
	rejoined := settle(t, s, ttl)
	t.Logf("partition of r2: not ready %v after the cut, its slots held by r0 and r1 %v after; healed after %v, ring settled %v later",
		notReady.Round(time.Millisecond), takenOver.Round(time.Millisecond), healed.Sub(cut).Round(time.Millisecond), rejoined.Round(time.Millisecond))

	time.Sleep(2 * time.Second) // work goes on in the healed ring
	restart := time.Now()
	if err := s.Ring.Restart(); err != nil {
		t.Fatal(err)
	}
	back := time.Since(restart)
	settled := settle(t, s, ttl)
	t.Logf("etcd restart: down %v, the ring settled %v after it answered again", back.Round(time.Millisecond), settled.Round(time.Millisecond))
	l.finish(pods, 3*time.Minute)
}
