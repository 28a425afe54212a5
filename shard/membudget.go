package shard

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
)

// memoryBudgetShare is the share of the replica's memory limit its heap may
// reach before the reconciles in flight for long are suspected: the rest is
// the runtime's own (stacks, the collector's headroom) and the margin in
// which the watchdog acts before the kernel does.
const memoryBudgetShare = 0.6

// DefaultMemoryBudget is memoryBudgetShare of the lower of the process's
// memory cgroup limit (v1 or v2) and Go's soft memory limit (GOMEMLIMIT), or
// -1 (no memory check) where neither is set.
func DefaultMemoryBudget() int64 {
	limit := int64(math.MaxInt64)
	if l := debug.SetMemoryLimit(-1); l > 0 {
		limit = l
	}
	if l, ok := cgroupMemoryLimit(); ok && l < limit {
		limit = l
	}
	if limit == math.MaxInt64 {
		return -1
	}
	return int64(float64(limit) * memoryBudgetShare)
}

// cgroupMemoryLimit reads the memory limit of this process's cgroup.
func cgroupMemoryLimit() (int64, bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var root, file string
		switch {
		case parts[0] == "0" && parts[1] == "": // v2
			root, file = "/sys/fs/cgroup", "memory.max"
		case strings.Contains(","+parts[1]+",", ",memory,"): // v1
			root, file = "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		// The path is the cgroup's own; in a container without a cgroup
		// namespace it names the host's hierarchy, whose root the container
		// sees as its own cgroup.
		for _, f := range []string{filepath.Join(root, parts[2], file), filepath.Join(root, file)} {
			v, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			n, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
			// v1 says "no limit" with a huge number (a page-rounded MaxInt64), v2 with "max".
			if err == nil && n > 0 && n < 1<<62 {
				return n, true
			}
			break
		}
	}
	return 0, false
}

// softLimitShare is the share of the memory cgroup's limit SetSoftMemoryLimit gives Go's
// collector as its soft limit (GOMEMLIMIT): it collects harder as the heap nears it, well
// before the kernel's OOM killer, leaving the rest to stacks and the runtime's own.
const softLimitShare = 0.85

// SetSoftMemoryLimit sets Go's soft memory limit to softLimitShare of the process's memory
// cgroup limit, unless GOMEMLIMIT already sets one or no cgroup limit is found, and returns
// the limit in force (0 for none) and whether it set it. Without it, at GOGC=100 the heap
// nears twice the live heap before each collection, and a replica of 600 MiB live in a 2 GiB
// container would pass the memory budget on garbage alone.
func SetSoftMemoryLimit() (limit int64, set bool) {
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
		return l, false
	}
	cg, ok := cgroupMemoryLimit()
	if !ok {
		return 0, false
	}
	limit = int64(float64(cg) * softLimitShare)
	debug.SetMemoryLimit(limit)
	return limit, true
}

// heapSample is the runtime metric of the heap's live objects, as the last collection
// marked them: garbage not yet collected does not count, and with a soft limit the collector
// runs often enough as the heap nears it for a handler that keeps what it allocates to show.
const heapSample = "/gc/heap/live:bytes"

// heapBytes reads the live heap.
func heapBytes() int64 {
	s := []metrics.Sample{{Name: heapSample}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}
