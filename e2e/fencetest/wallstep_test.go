package fencetest

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
	"github.com/ringfire/ringfire/internal/wallstep"
)

// The load and the partition of the wall-step test: shorter than the
// paused test's, since the partition needs only a few seconds of work on
// either side of it.
const (
	stepJobCount = 60
	stepCutAfter = 4 * time.Second // into the load: the replicas are mid-work
	stepCutFor   = 4 * leaseTTL    // the cut replicas' leases expire, the others take their slots
)

// wallSteps are the cut replicas and the steps of their wall clocks: a
// minute back for one, forward for the other.
var wallSteps = map[string]time.Duration{"r1": -time.Minute, "r2": time.Minute}

// TestPartitionedReplicaWithASteppedClockLandsNoStaleWrite cuts two of three
// replicas off from the ring's etcd (a fault proxy each) while Jobs are
// being created and their pods run, and steps the wall clock of their
// membership at the cut (wallstep.Env, a test-only hook of `ringfire run`):
// r1's a minute back, r2's a minute forward. The API server stays
// reachable, so a cut replica that kept writing would land the writes. After
// four lease TTLs the cut heals: the cut replicas must rejoin and every Job
// complete.
//
// A fence on the wall clock would let r1 write for a minute after its lease
// expired, in slots r0 holds by then; a fence on the monotonic clock stops
// it before the lease can expire. Checked from outside, as
// TestPausedReplicaLandsNoStaleWrite does (the audit log against the
// observer's tenures):
//
//   - no write of any replica landed in another replica's tenure of its slot
//     (staleWrites);
//   - no write of a cut replica received by the API server after its lease
//     had expired (the observer saw its slot keys go), and before it may
//     have held a slot again, landed or may have landed;
//   - each cut replica wrote before the cut, lost slots during it, and holds
//     slots at the end; no pod name was created twice.
func TestPartitionedReplicaWithASteppedClockLandsNoStaleWrite(t *testing.T) {
	cluster.RequireTools(t)
	bin := procs.Build(t)
	cut := []string{"r1", "r2"}
	opts := []replicaOptions{{}}
	for _, id := range cut {
		opts = append(opts, replicaOptions{Proxied: true, Env: []string{wallstep.Env + "=" + wallSteps[id].String()}})
	}
	w := startWorld(t, bin, opts)
	creations := stack.WatchPodCreations(t, w.kube, ns)

	jobs := make([]*batch.Job, stepJobCount)
	names := make([]string, stepJobCount)
	for i := range jobs {
		names[i] = fmt.Sprintf("step-%03d", i)
		jobs[i] = vcjob.New(ns, names[i], vcjob.Task("worker", podsPerJob, podRun.String(), ""))
	}
	loadStart := time.Now()
	cutCtx, stopCut := context.WithCancel(context.Background())
	t.Cleanup(stopCut)
	partitions := make(chan partition, 1)
	go func() { partitions <- partitionReplicas(cutCtx, w, cut, stepCutAfter, stepCutFor) }()
	createJobs(t, w.volcano, jobs, createEvery)
	pt := <-partitions
	if pt.err != nil {
		t.Fatal(pt.err)
	}
	t.Logf("%d Jobs created in %v; %v cut off from etcd, their wall clocks stepped %v, at +%v, healed at +%v",
		stepJobCount, time.Since(loadStart).Round(time.Millisecond), cut, wallSteps,
		pt.cut.Sub(loadStart).Round(time.Millisecond), pt.healed.Sub(loadStart).Round(time.Millisecond))

	phases := waitFinished(t, w.volcano, names, 3*time.Minute)
	t.Logf("Jobs finished %v after the load began: %s", time.Since(loadStart).Round(time.Second), countPhases(phases, names))
	for _, name := range names {
		if phases[name] != batch.Completed {
			t.Errorf("job %s ended in phase %q, want Completed", name, phases[name])
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := procs.WaitRing(ctx, w.replicas, time.Minute); err != nil {
		t.Errorf("ring did not settle after the partition: %v", err)
	}
	for _, id := range cut {
		r := w.replica(t, id)
		fenced, _ := r.Metric(ctx, "ringfire_fencing_events_total")
		unsent, _ := r.Metric(ctx, "ringfire_writes_fenced_total")
		t.Logf("%s (wall step %v): fencing events %v, writes refused unsent at its transport %v", id, wallSteps[id], fenced, unsent)
	}
	atEnd, err := w.owners.snapshot()
	if err != nil {
		t.Fatal(err)
	}

	tenures, rec := w.stopAndAudit(t)
	perReplica := checkNoStaleWrite(t, rec, tenures)
	for _, id := range cut {
		if perReplica[id] == 0 {
			t.Errorf("the audit log holds no write of %s: the check saw nothing", id)
		}
		checkPartitioned(t, id, rec.writes, tenures, atEnd, pt)
	}
	twice, total := creations.Twice()
	if len(twice) > 0 {
		t.Errorf("%d pod names were created more than once, e.g. %v", len(twice), twice[:min(5, len(twice))])
	}
	if total != stepJobCount*podsPerJob {
		t.Errorf("%d pods created, want %d", total, stepJobCount*podsPerJob)
	}
}

// partition is when replicas were cut off from etcd and when the cut healed.
type partition struct {
	cut, healed time.Time
	err         error
}

// partitionReplicas waits after, cuts the named replicas' proxies to etcd,
// steps their wall clocks (SIGUSR1, see wallstep.Env) at once, so that the
// step falls after their last renewal and before their fence, waits hold
// and heals the cuts. It heals at once if ctx ends first.
func partitionReplicas(ctx context.Context, w *world, ids []string, after, hold time.Duration) partition {
	var pt partition
	select {
	case <-ctx.Done():
		return partition{err: ctx.Err()}
	case <-time.After(after):
	}
	for _, id := range ids {
		w.proxies[id].Cut()
	}
	pt.cut = time.Now()
	for _, r := range w.replicas {
		if slices.Contains(ids, r.ID) && pt.err == nil {
			if err := r.Signal(syscall.SIGUSR1); err != nil {
				pt.err = fmt.Errorf("step the wall clock of %s: %w", r.ID, err)
			}
		}
	}
	if pt.err == nil {
		select {
		case <-ctx.Done():
		case <-time.After(hold):
		}
	}
	for _, id := range ids {
		w.proxies[id].Heal()
	}
	pt.healed = time.Now()
	return pt
}

// checkPartitioned checks that replica id, cut off during pt, was working
// at the cut, lost its slots to the others during it (its lease expired),
// sent no write from then until it may have held a slot again, and holds
// slots at the end (atEnd, taken before the replicas stopped).
func checkPartitioned(t *testing.T, id string, writes []write, tenures, atEnd map[int][]tenure, pt partition) {
	t.Helper()
	lost := lostBy(tenures, id, pt.cut, pt.healed)
	if lost == 0 {
		t.Errorf("%s lost no slot while cut off for %v: its lease did not expire", id, stepCutFor)
		return
	}
	// Its lease went at once with all its keys; the observer saw the first
	// deletion by expired, so the lease had expired by then.
	var expired time.Time
	for _, ts := range tenures {
		for _, tn := range ts {
			if tn.Holder == id && !tn.End.Before(pt.cut) && tn.End.Before(pt.healed) && (expired.IsZero() || tn.End.Before(expired)) {
				expired = tn.End
			}
		}
	}
	back, ok := firstEarliest(tenures, id, expired)
	if !ok {
		t.Errorf("%s held no slot again after the cut healed", id)
	}
	if heldBy(atEnd, id) == 0 {
		t.Errorf("%s holds no slot at the end", id)
	}
	before, during, late, refused := 0, 0, 0, 0
	for _, w := range writes {
		switch {
		case w.Replica != id:
		case w.Received.Before(pt.cut):
			before++
		case w.Received.Before(expired):
			during++
		case ok && !w.Received.Before(back):
		case !w.mayHaveLanded():
			refused++ // sent before the fence, say, and refused by its precondition
		default:
			late++
			if late <= 10 {
				t.Errorf("%s landed a write sent after its lease had expired (by %s) and before it may have held a slot again: %s",
					id, clock(expired), w)
			}
		}
	}
	if before == 0 {
		t.Errorf("%s wrote nothing before the cut: the test caught no work", id)
	}
	if late > 10 {
		t.Errorf("... %s sent %d such writes in all", id, late)
	}
	t.Logf("%s (wall step %v): %d writes before the cut, %d from the cut until its lease expired %v after it "+
		"(%d slots lost), %d after that landed and %d refused; it may have held a slot again %v after the cut healed",
		id, wallSteps[id], before, during, expired.Sub(pt.cut).Round(time.Millisecond), lost, late, refused,
		back.Sub(pt.healed).Round(time.Millisecond))
}
