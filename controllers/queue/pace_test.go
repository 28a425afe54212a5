package queue

import (
	"testing"
	"time"
)

func TestPacer(t *testing.T) {
	p := newPacer(time.Second)
	t0 := time.Unix(1000, 0)

	if wait, _ := p.hold("q", t0); wait != 0 {
		t.Fatalf("a queue never written waits %v", wait)
	}
	p.wrote("q", t0)

	wait, schedule := p.hold("q", t0.Add(300*time.Millisecond))
	if wait != 700*time.Millisecond || !schedule {
		t.Fatalf("hold right after a write = %v, %v; want 700ms, schedule", wait, schedule)
	}
	wait, schedule = p.hold("q", t0.Add(500*time.Millisecond))
	if wait != 500*time.Millisecond || schedule {
		t.Fatalf("second hold = %v, %v; want 500ms, already scheduled", wait, schedule)
	}
	if wait, _ := p.hold("other", t0.Add(500*time.Millisecond)); wait != 0 {
		t.Fatalf("another queue waits %v", wait)
	}
	if wait, _ := p.hold("q", t0.Add(time.Second)); wait != 0 {
		t.Fatalf("at the due time the write waits %v", wait)
	}

	// A write (a state change) clears the scheduled one: the next hold schedules anew.
	p.wrote("q", t0.Add(2*time.Second))
	if _, schedule := p.hold("q", t0.Add(2100*time.Millisecond)); !schedule {
		t.Fatal("no schedule after a write")
	}
	p.wrote("q", t0.Add(2200*time.Millisecond))
	if _, schedule := p.hold("q", t0.Add(2300*time.Millisecond)); !schedule {
		t.Fatal("the next hold after a write did not schedule")
	}
	p.forget("q")
	if wait, _ := p.hold("q", t0.Add(2400*time.Millisecond)); wait != 0 {
		t.Fatalf("a forgotten queue waits %v", wait)
	}
}
