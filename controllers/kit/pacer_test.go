package kit

import (
	"testing"
	"time"
)

func TestPacerMergesCountChanges(t *testing.T) {
	p := Pacer{Window: time.Second}
	t0 := time.Unix(1000, 0)
	// A Job never written: its first count change waits a window, and so do the
	// changes that follow it within the window, to the same moment.
	if w := p.Wait("ns/a", t0); w != time.Second {
		t.Fatalf("the first change waits %v, want a window (1s)", w)
	}
	if w := p.Wait("ns/a", t0.Add(300*time.Millisecond)); w != 700*time.Millisecond {
		t.Fatalf("a second change 300 ms later waits %v, want 700ms (the first one's window)", w)
	}
	if w := p.Wait("ns/b", t0.Add(300*time.Millisecond)); w != time.Second {
		t.Fatalf("another Job's first change waits %v, want its own window", w)
	}
	if w := p.Wait("ns/a", t0.Add(time.Second)); w != 0 {
		t.Fatalf("at the window's end: wait %v, want 0", w)
	}
	// Written: the next change waits a window from that write.
	p.Wrote("ns/a", t0.Add(time.Second))
	if w := p.Wait("ns/a", t0.Add(1500*time.Millisecond)); w != time.Second {
		t.Fatalf("a change 500 ms after a write waits %v, want a window from the change (1s)", w)
	}
	// A phase write 200 ms later carries the counts: the next change starts afresh.
	p.Wrote("ns/a", t0.Add(1700*time.Millisecond))
	if w := p.Wait("ns/a", t0.Add(2200*time.Millisecond)); w != time.Second {
		t.Fatalf("a change after a phase write waits %v, want 1s", w)
	}
	// A held change whose write never came does not make a later change due at once.
	if w := p.Wait("ns/a", t0.Add(10*time.Second)); w != time.Second {
		t.Fatalf("a change long after a stale one waits %v, want 1s", w)
	}
	off := Pacer{}
	off.Wrote("ns/a", t0)
	if w := off.Wait("ns/a", t0); w != 0 {
		t.Fatalf("with no window: wait %v", w)
	}
}
