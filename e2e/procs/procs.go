// Package procs is the end-to-end tests' and benchmarks' handle on
// internal/procs, which runs ringfire replicas as `ringfire run` processes:
// the same Args, Replica and WaitRing, with Start and StopAll that report
// to a test, and Build, the ringfire binary of the working tree.
//
//   - build.go: Build and Revision.
//   - procs.go: the rest, each a thin layer over internal/procs.
//   - metricstoken.go: MetricsToken, a scraper's token for replicas run with
//     --metrics-secure.
package procs

import (
	"context"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/procs"
)

// Args are the flags every replica of a run shares (procs.Args).
type Args = procs.Args

// Replica is one `ringfire run` process (procs.Replica).
type Replica = procs.Replica

// Status is the part of a replica's /status.json tests read (procs.Status).
type Status = procs.Status

// stopGrace is how long StopAll waits for replicas to leave before killing
// them.
const stopGrace = 20 * time.Second

// Addrs are the addresses a replica serves on (procs.Addrs).
type Addrs = procs.Addrs

// Start starts replica id with its metrics and health servers on free ports;
// a failure fails the test. Stop it with StopAll.
func Start(tb testing.TB, a Args, id string) *Replica {
	tb.Helper()
	return StartOn(tb, a, id, Addrs{})
}

// StartOn is Start on the given addresses (procs.Start): an empty metrics or
// health address takes a free port, an empty pprof address serves none.
func StartOn(tb testing.TB, a Args, id string, addrs Addrs) *Replica {
	tb.Helper()
	r, err := procs.Start(a, id, addrs)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// StopAll stops the replicas together (procs.StopAll); one that has not
// exited 20 seconds after SIGTERM is killed and fails the test.
func StopAll(tb testing.TB, replicas []*Replica) {
	tb.Helper()
	if err := procs.StopAll(replicas, stopGrace); err != nil {
		tb.Error(err)
	}
}

// WaitRing waits until the replicas share every slot as assigned
// (procs.WaitRing).
func WaitRing(ctx context.Context, replicas []*Replica, limit time.Duration) error {
	return procs.WaitRing(ctx, replicas, limit)
}

// MetricValue sums a metric over its label sets that carry labels in a
// Prometheus text exposition (procs.MetricValue).
func MetricValue(exposition, name string, labels ...string) (float64, bool) {
	return procs.MetricValue(exposition, name, labels...)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago
// (procs.FreePort).
func FreePort() (int, error) { return procs.FreePort() }
