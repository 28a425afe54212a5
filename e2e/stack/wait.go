package stack

import (
	"testing"
	"time"
)

// WaitFor polls cond every 50 ms until it holds, and fails the test after
// limit with what cond last said it saw. Every wait of the suites is
// bounded this way.
func WaitFor(t testing.TB, what string, limit time.Duration, cond func() (ok bool, saw string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s; last seen: %s", limit, what, saw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitUntil is WaitFor for a condition that has nothing to say.
func WaitUntil(t testing.TB, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	WaitFor(t, what, limit, func() (bool, string) { return cond(), "" })
}
