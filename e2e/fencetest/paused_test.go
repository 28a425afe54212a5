package fencetest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// The load and the pause.
const (
	jobCount    = 100
	podsPerJob  = 3
	podRun      = 3 * time.Second
	createEvery = 100 * time.Millisecond // 100 Jobs over 10 s
	pauseAfter  = 4 * time.Second        // into the load: the replica is mid-work
	pauseFor    = 3 * leaseTTL
	paused      = "r1"
	// pausedQPS throttles the paused replica's API client below what its
	// share of the load asks for, so that at the stop some of its writes
	// have passed the write guard and wait in client-go's rate limiter:
	// the moment the guard's check before each write cannot cover, and the
	// one a real replica that is paused while busy is in.
	pausedQPS = 10
)

// TestPausedReplicaLandsNoStaleWrite stops one of three replicas with
// SIGSTOP while Jobs are being created and their pods run, keeps it stopped
// for three lease TTLs (the others take its slots over), then continues it:
// it must fence itself, rejoin with a new lease and get slots back, and
// every Job must complete. The paused replica's API client is throttled
// (pausedQPS), so that it is stopped with writes queued behind the write
// guard.
//
// Checked from outside the replicas, once they have all stopped:
//
//   - no write of any replica on a key-owned object (a Job, Queue or
//     Command, or an object labelled with a slot: pods, PodGroups,
//     Services, ConfigMaps, Secrets, NetworkPolicies, PVCs) landed, as the
//     audit log tells it, while another replica's tenure of its slot had
//     begun and the slot had not come back to the writer (see staleWrites).
//     Events are not key-owned writes: any replica may record one about any
//     object, and they are left out;
//   - no pod name was created twice (distinct UIDs per name, from a watch);
//   - the paused replica lost slots during the pause, and holds slots again
//     at the end.
//
// The numbers of the run (writes the paused replica sent after waking and
// how many the API server refused, how long until it held slots again) are
// logged; docs/e2e.md records some.
func TestPausedReplicaLandsNoStaleWrite(t *testing.T) {
	cluster.RequireTools(t)
	bin := procs.Build(t)
	w := startWorld(t, bin, []replicaOptions{{}, {QPS: pausedQPS}, {}})
	p := w.replica(t, paused)
	creations := stack.WatchPodCreations(t, w.kube, ns)

	jobs := make([]*batch.Job, jobCount)
	names := make([]string, jobCount)
	for i := range jobs {
		names[i] = fmt.Sprintf("fence-%03d", i)
		jobs[i] = vcjob.New(ns, names[i], vcjob.Task("worker", podsPerJob, podRun.String(), ""))
	}
	loadStart := time.Now()
	pauseCtx, stopPause := context.WithCancel(context.Background())
	t.Cleanup(stopPause)
	pauses := make(chan pause, 1)
	go func() { pauses <- pauseReplica(pauseCtx, p, pauseAfter, pauseFor) }()
	createJobs(t, w.volcano, jobs, createEvery)
	pz := <-pauses
	if pz.err != nil {
		t.Fatal(pz.err)
	}
	t.Logf("%d Jobs created in %v; %s stopped at +%v, continued at +%v",
		jobCount, time.Since(loadStart).Round(time.Millisecond), paused,
		pz.stopped.Sub(loadStart).Round(time.Millisecond), pz.woke.Sub(loadStart).Round(time.Millisecond))

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
		t.Errorf("ring did not settle after the pause: %v", err)
	}
	fenced, _ := p.Metric(ctx, "ringfire_fencing_events_total")
	unsent, _ := p.Metric(ctx, "ringfire_writes_fenced_total")
	t.Logf("%s refused %v writes unsent at its transport after it woke (shard.FenceWrites)", paused, unsent)
	atEnd, err := w.owners.snapshot()
	if err != nil {
		t.Fatal(err)
	}

	tenures, rec := w.stopAndAudit(t)

	checkTakeover(t, atEnd, pz, fenced)
	checkWrites(t, rec, tenures, pz)
	twice, total := creations.Twice()
	if len(twice) > 0 {
		t.Errorf("%d pod names were created more than once, e.g. %v", len(twice), twice[:min(5, len(twice))])
	}
	if total != jobCount*podsPerJob {
		t.Errorf("%d pods created, want %d", total, jobCount*podsPerJob)
	}
	t.Logf("%d pods created, none twice", total)
}

// pause is when a replica was stopped and continued.
type pause struct {
	stopped, woke time.Time
	err           error
}

// pauseReplica waits after, stops r with SIGSTOP, waits hold and continues
// it with SIGCONT. It continues r at once if ctx ends first.
func pauseReplica(ctx context.Context, r *procs.Replica, after, hold time.Duration) pause {
	var pz pause
	select {
	case <-ctx.Done():
		return pause{err: ctx.Err()}
	case <-time.After(after):
	}
	if pz.err = r.Signal(syscall.SIGSTOP); pz.err != nil {
		return pz
	}
	pz.stopped = time.Now()
	select {
	case <-ctx.Done():
	case <-time.After(hold):
	}
	pz.err = r.Signal(syscall.SIGCONT)
	pz.woke = time.Now()
	return pz
}

// checkTakeover checks, from the observer's record taken before the
// replicas stopped, that the other replicas took the paused replica's slots
// while it was stopped and that it held slots again at the end, and logs
// how long each took.
func checkTakeover(t *testing.T, tenures map[int][]tenure, pz pause, fenced float64) {
	t.Helper()
	lost := lostBy(tenures, paused, pz.stopped, pz.woke)
	if lost == 0 {
		t.Errorf("%s lost no slot while stopped for %v: the pause did not outlast its lease", paused, pauseFor)
	}
	var takeover time.Time
	for _, ts := range tenures {
		for i := 1; i < len(ts); i++ {
			if ts[i-1].Holder == paused && ts[i].Holder != paused && ts[i].Latest.After(pz.stopped) && ts[i].Latest.Before(pz.woke) &&
				(takeover.IsZero() || ts[i].Latest.After(takeover)) {
				takeover = ts[i].Latest
			}
		}
	}
	back, ok := firstBegin(tenures, paused, pz.woke)
	if !ok {
		t.Errorf("%s held no slot again after it was continued", paused)
	}
	held := heldBy(tenures, paused)
	if held == 0 {
		t.Errorf("%s holds no slot at the end", paused)
	}
	t.Logf("%s lost %d slots while stopped, the last taken over %v after the stop; fencing events %v; "+
		"it held a slot again %v after it was continued, and %d slots at the end",
		paused, lost, takeover.Sub(pz.stopped).Round(time.Millisecond), fenced,
		back.Sub(pz.woke).Round(time.Millisecond), held)
}

// checkWrites fails the test for every stale write in the audit log, and
// logs what the paused replica sent after it woke.
func checkWrites(t *testing.T, rec auditRecord, tenures map[int][]tenure, pz pause) {
	t.Helper()
	perReplica := checkNoStaleWrite(t, rec, tenures)
	if perReplica[paused] == 0 {
		t.Errorf("the audit log holds no write of %s: the check saw nothing", paused)
	}
	for _, w := range rec.writes {
		if w.Code >= 500 && w.NotApplied != "" {
			t.Logf("answered %d, but could not have landed: %s: %s", w.Code, w.NotApplied, w)
		}
	}
	median, widest := placementWidths(tenures)
	t.Logf("observer: each tenure's begin placed in a window of %v (median; widest %v)", median, widest)
	if margin, ok := ownMargin(rec.writes, tenures); ok {
		t.Logf("closest landed write to the boundary: %v after the latest moment its writer's tenure can have begun", margin.Round(time.Microsecond))
	}
	checkMidWork(t, rec.writes, pz)
	checkAfterWake(t, rec.writes, tenures, pz)
}

// checkNoStaleWrite fails the test for every write that landed, or may have
// landed, in another replica's tenure of its slot, and for every replica
// write the check cannot place. It returns how many writes on key-owned
// objects each replica made.
func checkNoStaleWrite(t *testing.T, rec auditRecord, tenures map[int][]tenure) map[string]int {
	t.Helper()
	if len(rec.unresolved) > 0 {
		t.Errorf("%d replica writes name no slot, so the check cannot place them, e.g.:\n%s",
			len(rec.unresolved), strings.Join(rec.unresolved[:min(5, len(rec.unresolved))], "\n"))
	}
	perReplica := map[string]int{}
	for _, w := range rec.writes {
		perReplica[w.Replica]++
	}
	t.Logf("audit log: %d write events, %d by replicas on key-owned objects %v; %d more name no slot but wrote nothing (cut off before their body was read)",
		rec.events, len(rec.writes), perReplica, rec.unplacedNotApplied)
	var certain, maybeOwn []staleWrite
	for _, s := range staleWrites(rec.writes, tenures) {
		if s.MaybeOwn {
			maybeOwn = append(maybeOwn, s)
		} else {
			certain = append(certain, s)
		}
	}
	if len(certain) > 0 {
		t.Errorf("%d writes landed, or may have landed, in another replica's tenure of their slot:\n%s",
			len(certain), describeStale(certain, 20))
	}
	if len(maybeOwn) > 0 {
		t.Logf("%d writes completed when their writer's own next tenure may already have begun (taken to be in it):\n%s",
			len(maybeOwn), describeStale(maybeOwn, 10))
	}
	return perReplica
}

// checkMidWork checks that the paused replica was working when it was
// stopped, so that the test exercised what it is about, and logs the writes
// it had in flight: received by the API server before the stop, answered
// after it.
func checkMidWork(t *testing.T, writes []write, pz pause) {
	t.Helper()
	before, inFlight := 0, 0
	var last time.Time
	for _, w := range writes {
		if w.Replica != paused || !w.Received.Before(pz.stopped) {
			continue
		}
		before++
		if w.Received.After(last) {
			last = w.Received
		}
		if w.Completed.After(pz.stopped) {
			inFlight++
		}
	}
	if before == 0 {
		t.Errorf("%s wrote nothing before it was stopped: the pause caught no work", paused)
		return
	}
	t.Logf("before the stop %s sent %d writes, the last %v before it; %d were still in flight at the stop",
		paused, before, pz.stopped.Sub(last).Round(time.Millisecond), inFlight)
}

// checkAfterWake logs the writes the paused replica sent once continued: how
// many, and how the API server answered (4xx: refused; 5xx: cut off or timed
// out). None may reach the API server before the replica can hold a slot
// again: a write that waited out the pause in client-go's rate limiter is
// stopped at the transport (shard.FenceWrites), unsent.
func checkAfterWake(t *testing.T, writes []write, tenures map[int][]tenure, pz pause) {
	back, _ := firstBegin(tenures, paused, pz.woke)
	earliest, _ := firstEarliest(tenures, paused, pz.woke)
	sent, refused, unanswered := 0, 0, 0
	codes := map[int]int{}
	var early []string
	for _, w := range writes {
		if w.Replica != paused || w.Received.Before(pz.woke) {
			continue
		}
		sent++
		codes[w.Code]++
		switch {
		case w.Code >= 400 && w.Code < 500:
			refused++
		case !w.landed():
			unanswered++
		}
		if earliest.IsZero() || w.Received.Before(earliest) {
			early = append(early, w.String())
		}
	}
	t.Logf("after it was continued, %s sent %d writes (by response code %v): %d refused, %d without an answer; "+
		"%d sent before it held a slot again",
		paused, sent, sortedCodes(codes), refused, unanswered, len(early))
	for _, s := range early[:min(10, len(early))] {
		t.Errorf("%s sent a write after it was continued and before it can have held a slot again: %s", paused, s)
	}
	t.Logf("stopped at %s, continued at %s, held a slot again by %s", clock(pz.stopped), clock(pz.woke), clock(back))
}

// sortedCodes prints a count per HTTP code, in code order.
func sortedCodes(codes map[int]int) string {
	keys := make([]int, 0, len(codes))
	for c := range codes {
		keys = append(keys, c)
	}
	sort.Ints(keys)
	var parts []string
	for _, c := range keys {
		parts = append(parts, fmt.Sprintf("%d: %d", c, codes[c]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
