package wallstep

import (
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	if err := Check(); err != nil {
		t.Fatal(err)
	}
}

// A stepped reading tells the step to UnixNano and nothing to Sub, Before
// and After against readings of time.Now.
func TestStepMovesTheWallReadingOnly(t *testing.T) {
	for _, d := range []time.Duration{-time.Minute, time.Minute, 1500 * time.Millisecond, -time.Nanosecond} {
		before := time.Now()
		stepped := Step(before, d)
		if got := stepped.UnixNano() - before.UnixNano(); got != int64(d) {
			t.Errorf("step %v: UnixNano moved by %v", d, time.Duration(got))
		}
		if got := stepped.Sub(before); got != 0 {
			t.Errorf("step %v: Sub against the reading it was made from = %v, want 0", d, got)
		}
		later := time.Now()
		if later.Sub(stepped) != later.Sub(before) {
			t.Errorf("step %v: a later reading is %v after the stepped one, %v after the original", d, later.Sub(stepped), later.Sub(before))
		}
	}
}

// Without a monotonic reading there is only the wall one to move.
func TestStepOfAWallOnlyReading(t *testing.T) {
	wall := time.Unix(1_700_000_000, 0)
	if got := Step(wall, -time.Minute); !got.Equal(wall.Add(-time.Minute)) {
		t.Errorf("Step = %v, want %v", got, wall.Add(-time.Minute))
	}
}

func TestClock(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	start := c.Now()
	c.Set(-time.Minute)
	after := c.Now()
	if d := after.Sub(start); d < 0 || d > time.Minute {
		t.Errorf("monotonic interval across a -1m step = %v, want a small positive one", d)
	}
	if d := after.UnixNano() - start.UnixNano(); d > int64(-59*time.Second) {
		t.Errorf("wall interval across a -1m step = %v, want about -1m", time.Duration(d))
	}
}
