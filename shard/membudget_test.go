package shard

import (
	"math"
	"runtime/debug"
	"testing"
)

// SetSoftMemoryLimit keeps a soft limit GOMEMLIMIT set, and otherwise sets softLimitShare of
// the memory cgroup's limit where there is one.
func TestSetSoftMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })

	debug.SetMemoryLimit(3 << 30)
	if limit, set := SetSoftMemoryLimit(); set || limit != 3<<30 {
		t.Errorf("with GOMEMLIMIT at 3 GiB: limit %d, set %v; want it kept", limit, set)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	limit, set := SetSoftMemoryLimit()
	cg, ok := cgroupMemoryLimit()
	switch {
	case !ok && (set || limit != 0):
		t.Errorf("no cgroup limit: limit %d, set %v; want none", limit, set)
	case ok && (!set || limit != int64(float64(cg)*softLimitShare) || debug.SetMemoryLimit(-1) != limit):
		t.Errorf("cgroup limit %d: limit %d, set %v, in force %d; want %v of it set", cg, limit, set, debug.SetMemoryLimit(-1), softLimitShare)
	}
}
