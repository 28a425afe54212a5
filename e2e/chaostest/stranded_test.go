package chaostest

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/stack"
)

// Slots a replica gains while the API server is away, and partly hands on
// before its cache could list them, must still have their Jobs enqueued once
// the API server is back. The Jobs here have no owned object at all (a
// ResourceQuota of zero PodGroups holds them back until just before the
// API server goes), so only the new owner's SlotsReady can wake them up.
//
// This once left 3 of 30 Jobs stuck every run: cache.Sharded.Lose restarted
// a batch that lost some slots over the slots it kept, while the cache still
// waited for the old batch to list, which never happened; and Lose waited
// for the old reflector to stop, up to 30 s while the API server was away,
// holding up the ring. Readiness is now kept per slot, and Lose does not
// wait (cache/sharded.go).
func TestSlotsHandedOnBeforeListed(t *testing.T) {
	const (
		ttl   = 5 * time.Second
		space = "stranded"
		jobs  = 30
	)
	s := stack.Start(t, stack.Options{Replicas: 3, Nodes: 4, StandIn: true, LeaseTTL: ttl, MaxRequeue: 40})
	ctx := context.Background()
	if _, err := s.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: space}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-podgroups", Namespace: space},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"count/podgroups.scheduling.volcano.sh": resource.MustParse("0"),
		}},
	}
	if _, err := s.Kube.CoreV1().ResourceQuotas(space).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stack.WaitUntil(t, "the quota to be counted", 30*time.Second, func() bool {
		q, err := s.Kube.CoreV1().ResourceQuotas(space).Get(ctx, quota.Name, metav1.GetOptions{})
		return err == nil && q.Status.Hard != nil
	})
	var names []string
	for i := range jobs {
		job := jobSpec("held", i)
		job.Namespace = space
		if _, err := s.Volcano.BatchV1alpha1().Jobs(space).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, job.Name)
	}
	time.Sleep(2 * time.Second) // every Job seen, its PodGroup refused

	// Lift the quota and take the API server away at once: the Jobs' retries
	// now fail on the missing API server instead.
	if err := s.Kube.CoreV1().ResourceQuotas(space).Delete(ctx, quota.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	restarted := make(chan error, 1)
	go func() { restarted <- s.Cluster.Restart(cluster.APIServer, false) }()
	stack.WaitUntil(t, "every replica to see the API server gone", 20*time.Second, func() bool {
		for _, id := range s.IDs() {
			if s.Ready(id) == nil {
				return false
			}
		}
		return true
	})
	// While it is gone: r2 leaves (r0 and r1 gain its slots, their caches
	// cannot list them), then r3 joins (r0 and r1 hand part of those slots
	// on before listing them).
	s.StopReplica("r2")
	left := settle(t, s, ttl)
	s.StartReplica("r3")
	joined := settle(t, s, ttl)
	t.Logf("while the API server was away: r2 left (ring settled in %v), r3 joined (settled in %v)", left.Round(time.Millisecond), joined.Round(time.Millisecond))
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := s.Cluster.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}

	stuck := waitCompletedIn(s, space, names, 60*time.Second)
	for _, name := range stuck[:min(3, len(stuck))] {
		t.Errorf("job %s/%s not Completed:\n%s", space, name, explainIn(s, space, name))
	}
	if len(stuck) > 0 {
		t.Fatalf("%d of %d Jobs not Completed 60s after the API server came back: %v", len(stuck), jobs, stuck)
	}
}
