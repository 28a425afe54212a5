package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// measurement is what one sub-benchmark saw.
type measurement struct {
	res        loadResult
	loadErr    error
	jobs       int                // Jobs over all iterations
	idleRSS    map[string]float64 // per replica, before the load
	cpu        map[string]float64 // CPU seconds per process, first create → quiet
	machine    machineCPU         // the whole machine over the same time
	machineErr error
	loadAvg    [2]string // before and after the load

	// After all pods: when the watch saw the last Job finish (when pods
	// end), the Jobs by phase then, each Job's create returned → seen
	// finished (sorted; the last iteration's), when the last pod started
	// and ended, and when the final counts were taken (after 2×quiet
	// without a write); durations from the first create.
	finished      time.Duration
	phases        map[batch.JobPhase]int
	finishLatency []time.Duration
	pods          podTimes
	countedAt     time.Duration
	settleErr     error
	// lateWrites is the replicas' writes between the final counts and
	// lateFor later, once the summary's reads are done.
	lateWrites float64
	lateFor    time.Duration

	// The request counters before the first create and once quiet, and
	// the Events then, to tell ringfire's from the control plane's.
	before, after             reading
	eventsBefore, eventsAfter map[types.UID]eventSeen
	countErr                  error
}

// measure runs the load b.N times (once with -benchtime=1x), sampling the
// replicas' heap; then waits until the Jobs are done (when their pods end)
// and the writes have stopped; and accounts for the CPU time and the API
// requests of all of it.
func measure(ctx context.Context, b *testing.B, e *env, c config, jobs int) measurement {
	m := measurement{idleRSS: map[string]float64{}, jobs: jobs * b.N}
	namespaces := make([]string, b.N)
	for i := range namespaces {
		namespaces[i] = fmt.Sprintf("bench-%d", i)
	}
	if err := makeNamespaces(ctx, e.kube, namespaces, time.Minute); err != nil {
		b.Fatal(err)
	}
	// Nothing the replicas do at start-up may fall within the counts.
	var err error
	if m.before, err = e.waitQuiet(ctx, c.quiet, time.Minute+2*c.quiet); err != nil {
		b.Errorf("before the load: %v", err)
	}
	if m.eventsBefore, err = listEvents(ctx, e.kube); err != nil {
		b.Fatal(err)
	}

	var sampling sync.WaitGroup
	samplingCtx, stopSampling := context.WithCancel(ctx)
	for _, r := range e.replicas {
		sampling.Go(func() { r.sampleHeap(samplingCtx, time.Second) })
		if u, err := readProc(r.PID()); err == nil {
			m.idleRSS[r.ID] = u.rss
		}
	}
	jobsCtx, stopJobs := context.WithCancel(ctx)
	defer stopJobs()
	jw := watchJobs(jobsCtx, e.volcano, namespaces)
	pids := e.components()
	cpuBefore := cpuSeconds(pids)
	machineBefore, errBefore := readMachineCPU()
	m.loadAvg[0] = loadAverage()
	progress := func(string, ...any) {} // with -v only: the log is cut short
	if testing.Verbose() {
		progress = b.Logf
	}

	b.ResetTimer()
	for i := range b.N {
		l := load{
			kube: e.kube, volcano: e.volcano, namespace: namespaces[i],
			jobs: jobs, taskPods: c.taskPods, creators: c.creators, rate: c.rate, podRun: c.podRun, limit: c.waitLimit,
			log: progress,
		}
		if m.res, m.loadErr = l.run(ctx); m.loadErr != nil {
			break
		}
	}
	b.StopTimer()

	m.settle(ctx, e, c, jw)
	stopJobs()
	stopSampling()
	sampling.Wait()
	m.cpu = cpuSeconds(pids)
	for name := range m.cpu {
		m.cpu[name] -= cpuBefore[name]
	}
	machine, errAfter := readMachineCPU()
	m.machine = machineCPU{busy: machine.busy - machineBefore.busy, total: machine.total - machineBefore.total}
	m.machineErr = errors.Join(errBefore, errAfter)
	m.loadAvg[1] = loadAverage()

	// Reads for the summary, after the CPU is accounted for.
	if m.eventsAfter, err = listEvents(ctx, e.kube); err != nil {
		m.countErr = errors.Join(m.countErr, err)
	}
	if c.podsEnd() && m.loadErr == nil {
		var err error
		m.pods, err = readPodTimes(ctx, e.kube, namespaces)
		m.settleErr = errors.Join(m.settleErr, err)
		for i, at := range m.res.created {
			if done := jw.finishedAt(namespaces[len(namespaces)-1], jobName(i)); !done.IsZero() {
				m.finishLatency = append(m.finishLatency, max(0, done.Sub(at)))
			}
		}
		slices.Sort(m.finishLatency)
	}
	// Writes the counts missed: a replica that defers some for longer than
	// the quiet window shows here, within another two windows.
	if m.after.perReplica != nil {
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(m.res.start.Add(m.countedAt + 2*c.quiet))):
		}
	}
	if late, err := e.replicaRequests(ctx); err == nil && m.after.perReplica != nil {
		for id, rc := range late {
			m.lateWrites += rc.minus(m.after.perReplica[id]).writes()
		}
		m.lateFor = time.Since(m.res.start) - m.countedAt
	}
	return m
}

// settle waits, within c.settle, until every Job has finished (when the
// pods end within that bound) and then until the writes stop, and takes
// the final reading of the request counters. After a failed load it only
// takes the reading.
func (m *measurement) settle(ctx context.Context, e *env, c config, jw *jobWatch) {
	if m.loadErr != nil {
		var err error
		m.after, err = e.read(ctx)
		m.countErr = errors.Join(m.countErr, err)
		return
	}
	deadline := time.Now().Add(c.settle)
	if c.podsEnd() {
		phases, last, err := waitJobsFinished(ctx, jw, m.jobs, c.settle)
		m.phases, m.settleErr = phases, errors.Join(m.settleErr, err)
		if !last.IsZero() {
			m.finished = last.Sub(m.res.start)
		}
	}
	// Even past the bound, wait a little for quiet: the counts are what
	// they are, but must be taken with no write in flight.
	var err error
	m.after, err = e.waitQuiet(ctx, c.quiet, max(time.Until(deadline), 3*c.quiet))
	m.settleErr = errors.Join(m.settleErr, err)
	m.countedAt = time.Since(m.res.start)
}
