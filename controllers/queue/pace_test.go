package queue

import (
	"testing"
	"time"
)

func TestPacer(t *testing.T) {
	p := newPacer(time.Second)
	t0 := time.Unix(1000, 0)

	if wait := p.hold("q", t0); wait != 0 {
		t.Fatalf("a queue never written waits %v", wait)
	}
	p.wrote("q", t0)
	if wait := p.hold("q", t0.Add(300*time.Millisecond)); wait != 700*time.Millisecond {
		t.Fatalf("hold right after a write = %v; want 700ms", wait)
	}
	if wait := p.hold("other", t0.Add(500*time.Millisecond)); wait != 0 {
		t.Fatalf("another queue waits %v", wait)
	}
	if wait := p.hold("q", t0.Add(time.Second)); wait != 0 {
		t.Fatalf("at the due time the write waits %v", wait)
	}
	p.forget("q")
	p.wrote("other", t0.Add(2*time.Second))
	if wait := p.hold("q", t0.Add(2*time.Second)); wait != 0 {
		t.Fatalf("a forgotten queue waits %v", wait)
	}
}
