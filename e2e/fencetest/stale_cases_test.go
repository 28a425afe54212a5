package fencetest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/shard"
)

// at is a time s seconds into a made-up run.
func at(s float64) time.Time {
	return time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(s * float64(time.Second)))
}

// wrote is a write by replica on slot 7, received at s and completed 10 ms
// later, answered with code.
func wrote(replica string, s float64, code int) write {
	return write{Replica: replica, Slot: 7, Verb: "update", Object: "jobs/status default/j", Code: code,
		Received: at(s), Completed: at(s + 0.01)}
}

// began is a tenure of holder whose creation lies in [s-0.02, s] seconds.
func began(holder string, s float64) tenure {
	return tenure{Holder: holder, Earliest: at(s - 0.02), Latest: at(s)}
}

// The story of slot 7 in every case: r1 holds it from 1s, is paused, its
// lease expires and r0 takes the slot at 5s; r1 wakes, rejoins, and the
// slot comes back to it at 9s after r0 let it go at 8s.
var slot7 = map[int][]tenure{7: {began("r1", 1), began("r0", 5), began("r1", 9)}}

func TestStaleWrites(t *testing.T) {
	cases := []struct {
		name      string
		w         write
		owner     string // "-" for not stale
		straddles bool
	}{
		{"in its own tenure", wrote("r1", 2, 200), "-", false},
		{"after its lease expired, before anyone took the slot", wrote("r1", 4.7, 200), "-", false},
		{"in the new owner's tenure", wrote("r1", 6, 200), "r0", false},
		{"refused in the new owner's tenure", wrote("r1", 6, 409), "-", false},
		{"after the new owner let go, before the slot came back", wrote("r1", 8.5, 201), "r0", false},
		{"after the slot came back", wrote("r1", 9.5, 200), "-", false},
		{"the new owner in its tenure", wrote("r0", 6, 200), "-", false},
		{"the new owner after handing the slot back", wrote("r0", 9.5, 200), "r1", false},
		{"sent before the takeover, completed in it",
			write{Replica: "r1", Slot: 7, Code: 201, Received: at(4.9), Completed: at(5.2)}, "r0", true},
		{"on a slot no replica has held", write{Replica: "r2", Slot: 8, Code: 200, Received: at(3), Completed: at(3)}, "", false},
		{"on a slot before anyone held it", wrote("r1", 0.5, 200), "", false},
		{"just before the slot can have come back", wrote("r1", 8.95, 201), "r0", false},
		{"unanswered in the new owner's tenure", wrote("r1", 6, 504), "r0", false},
		{"unanswered in the new owner's tenure, precondition outdated",
			write{Replica: "r1", Slot: 7, Code: 504, NotApplied: "outdated", Received: at(6), Completed: at(6.01)}, "-", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stale := staleWrites([]write{c.w}, slot7)
			if c.owner == "-" {
				if len(stale) != 0 {
					t.Fatalf("flagged as stale: %v", stale[0])
				}
				return
			}
			if len(stale) != 1 {
				t.Fatalf("not flagged, want a stale write in %q's tenure", c.owner)
			}
			if got := stale[0]; got.Owner != c.owner || got.Straddles != c.straddles || got.MaybeOwn {
				t.Errorf("got owner %q straddles %v, want %q %v (%v)", got.Owner, got.Straddles, c.owner, c.straddles, got)
			}
		})
	}
}

// A write that completed when the writer's own next tenure may already have
// begun is marked, not taken for certain.
func TestStaleWritesMaybeOwn(t *testing.T) {
	w := write{Replica: "r1", Slot: 7, Code: 200, Received: at(8.97), Completed: at(8.99)}
	stale := staleWrites([]write{w}, slot7)
	if len(stale) != 1 || !stale[0].MaybeOwn || stale[0].Owner != "r0" {
		t.Fatalf("got %v, want one stale write in r0's tenure marked MaybeOwn", stale)
	}
	// On a slot no one has held for certain, a write by a replica that may
	// have been the first holder is no violation.
	first := map[int][]tenure{7: {began("r2", 1)}}
	if stale := staleWrites([]write{{Replica: "r2", Slot: 7, Code: 201, Received: at(0.985), Completed: at(0.99)}}, first); len(stale) != 0 {
		t.Errorf("got %v, want none", stale)
	}
}

func TestPlace(t *testing.T) {
	probes := []probe{{rev: 10, sent: at(0), ret: at(0.001)}, {rev: 20, sent: at(1), ret: at(1.002)}, {rev: 30, sent: at(2), ret: at(2.003)}}
	cases := []struct {
		rev              int64
		received         float64
		earliest, latest float64
	}{
		{15, 1.5, 0, 1.002},   // between two probes: after the first was sent, before the second returned
		{25, 2.001, 1, 2.001}, // received before the next probe returned
		{35, 2.5, 2, 2.5},     // after the last probe: only the receipt bounds it
	}
	for _, c := range cases {
		e, l := place(probes, c.rev, at(c.received))
		if !e.Equal(at(c.earliest)) || !l.Equal(at(c.latest)) {
			t.Errorf("place(%d) = %s, %s; want %s, %s", c.rev, clock(e), clock(l), clock(at(c.earliest)), clock(at(c.latest)))
		}
	}
}

func TestOwnMargin(t *testing.T) {
	writes := []write{wrote("r1", 2, 200), wrote("r0", 5.3, 201), wrote("r1", 6, 409), wrote("r1", 9.05, 200)}
	got, ok := ownMargin(writes, slot7)
	if want := 60 * time.Millisecond; !ok || got.Round(time.Millisecond) != want {
		t.Errorf("ownMargin = %v, %v; want %v (r1's write completed 60ms after the slot came back)", got, ok, want)
	}
}

// auditLines is a made-up audit log: a Job created by the test, its status
// written by r1, then an update of it by r2 from the version before that,
// answered 504; a pod created by r1 (with the slot label), refused to r0
// (AlreadyExists), updated by r1 with a request cut off, deleted by r0 with
// a response that carries no object; a write on an object of no slot; and an
// event, which the policy would not record but a reader must skip.
const auditLines = `{"stage":"ResponseComplete","verb":"create","userAgent":"fencetest.test/v0.0.0","objectRef":{"resource":"jobs","namespace":"default","apiGroup":"batch.volcano.sh"},"responseStatus":{"code":201},"responseObject":{"metadata":{"name":"j","namespace":"default"}},"requestReceivedTimestamp":"2026-01-01T12:00:01.000000Z","stageTimestamp":"2026-01-01T12:00:01.010000Z"}
{"stage":"ResponseComplete","verb":"update","userAgent":"ringfire/r1","objectRef":{"resource":"jobs","namespace":"default","name":"j","apiGroup":"batch.volcano.sh","subresource":"status"},"responseStatus":{"code":200},"requestObject":{"metadata":{"name":"j","resourceVersion":"5"}},"responseObject":{"metadata":{"name":"j","resourceVersion":"9"}},"requestReceivedTimestamp":"2026-01-01T12:00:02.000000Z","stageTimestamp":"2026-01-01T12:00:02.005000Z"}
{"stage":"ResponseComplete","verb":"update","userAgent":"ringfire/r2","objectRef":{"resource":"jobs","namespace":"default","name":"j","apiGroup":"batch.volcano.sh"},"responseStatus":{"code":504},"requestObject":{"metadata":{"name":"j","resourceVersion":"5"}},"requestReceivedTimestamp":"2026-01-01T12:00:02.100000Z","stageTimestamp":"2026-01-01T12:00:02.200000Z"}
{"stage":"ResponseComplete","verb":"create","userAgent":"ringfire/r1","objectRef":{"resource":"pods","namespace":"default","name":"j-worker-0"},"responseStatus":{"code":201},"requestObject":{"metadata":{"name":"j-worker-0","labels":{"ringfire.io/slot":"7"}}},"responseObject":{"metadata":{"name":"j-worker-0","labels":{"ringfire.io/slot":"7"}}},"requestReceivedTimestamp":"2026-01-01T12:00:03.000000Z","stageTimestamp":"2026-01-01T12:00:03.004000Z"}
{"stage":"ResponseComplete","verb":"create","userAgent":"ringfire/r0","objectRef":{"resource":"pods","namespace":"default","name":"j-worker-0"},"responseStatus":{"code":409},"requestObject":{"metadata":{"name":"j-worker-0","labels":{"ringfire.io/slot":"7"}}},"responseObject":{"kind":"Status","metadata":{}},"requestReceivedTimestamp":"2026-01-01T12:00:06.000000Z","stageTimestamp":"2026-01-01T12:00:06.001000Z"}
{"stage":"ResponseComplete","verb":"update","userAgent":"ringfire/r1","objectRef":{"resource":"pods","namespace":"default","name":"j-worker-0"},"responseStatus":{"code":500,"message":"body closed by handler"},"requestReceivedTimestamp":"2026-01-01T12:00:06.500000Z","stageTimestamp":"2026-01-01T12:00:06.501000Z"}
{"stage":"ResponseComplete","verb":"delete","userAgent":"ringfire/r0","objectRef":{"resource":"pods","namespace":"default","name":"j-worker-0"},"responseStatus":{"code":200},"responseObject":{"kind":"Status","metadata":{}},"requestReceivedTimestamp":"2026-01-01T12:00:07.000000Z","stageTimestamp":"2026-01-01T12:00:07.002000Z"}
{"stage":"ResponseComplete","verb":"patch","userAgent":"ringfire/r0","objectRef":{"resource":"configmaps","namespace":"default","name":"unlabelled"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T12:00:07.500000Z","stageTimestamp":"2026-01-01T12:00:07.502000Z"}
{"stage":"ResponseComplete","verb":"create","userAgent":"ringfire/r1","objectRef":{"resource":"podgroups","namespace":"default","apiGroup":"scheduling.volcano.sh"},"responseStatus":{"code":500,"message":"body closed by handler"},"requestReceivedTimestamp":"2026-01-01T12:00:08.000000Z","stageTimestamp":"2026-01-01T12:00:08.030000Z"}
{"stage":"ResponseComplete","verb":"create","userAgent":"ringfire/r0","objectRef":{"resource":"events","namespace":"default","name":"j.1"},"responseStatus":{"code":201},"requestReceivedTimestamp":"2026-01-01T12:00:08.000000Z","stageTimestamp":"2026-01-01T12:00:08.001000Z"}
`

func TestReadAudit(t *testing.T) {
	const slots = 256
	path := filepath.Join(t.TempDir(), "audit.log")
	lines := strings.ReplaceAll(auditLines, `"ringfire.io/slot":"7"`, `"ringfire.io/slot":"`+strconv.Itoa(shard.SlotOf("default/j", slots))+`"`)
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := readAudit(path, slots)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		replica, verb, object string
		code                  int
	}{
		{"r1", "update", "jobs/status default/j", 200},
		{"r2", "update", "jobs default/j", 504},
		{"r1", "create", "pods default/j-worker-0", 201},
		{"r0", "create", "pods default/j-worker-0", 409},
		{"r1", "update", "pods default/j-worker-0", 500},
		{"r0", "delete", "pods default/j-worker-0", 200},
	}
	if len(rec.writes) != len(want) {
		t.Fatalf("got %d writes, want %d:\n%v", len(rec.writes), len(want), rec.writes)
	}
	slot := shard.SlotOf("default/j", slots)
	for i, w := range want {
		got := rec.writes[i]
		if got.Replica != w.replica || got.Verb != w.verb || got.Object != w.object || got.Code != w.code || got.Slot != slot {
			t.Errorf("write %d = %v, want %s %s %s → %d on slot %d", i, got, w.replica, w.verb, w.object, w.code, slot)
		}
	}
	if got := rec.writes[1]; got.NotApplied == "" || got.mayHaveLanded() {
		t.Errorf("r2's update from version 5, after version 9 was written: not applied %q, may have landed %v; want ruled out",
			got.NotApplied, got.mayHaveLanded())
	}
	if got := rec.writes[2]; !got.Received.Equal(at(3)) || !got.Completed.Equal(at(3.004)) {
		t.Errorf("times of the pod create = %v, %v; want the audit timestamps", got.Received, got.Completed)
	}
	if got := rec.writes[4]; got.NotApplied != "its body was never read" {
		t.Errorf("an update cut off before its body was read: not applied %q, want it ruled out", got.NotApplied)
	}
	if len(rec.unresolved) != 1 || !strings.Contains(rec.unresolved[0], "configmaps default/unlabelled") {
		t.Errorf("unresolved = %v, want the unlabelled configmap", rec.unresolved)
	}
	if rec.unplacedNotApplied != 1 {
		t.Errorf("%d writes without a slot ruled out, want 1: the create cut off before its body, and so its name, was read", rec.unplacedNotApplied)
	}
}
