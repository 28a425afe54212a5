package robusttest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// replicaMemoryLimit is the memory limit of deploy/ringfire's StatefulSet,
// which each replica here runs under.
const replicaMemoryLimit = 2 << 30

// memcgPrefix starts the name of every cgroup the suite makes, so that a
// run killed before its cleanup leaves nothing a later run cannot find.
const memcgPrefix = "ringfire-robusttest-"

// memcg is a memory cgroup of the suite's own, limiting one replica as a
// container runtime limits a container: past the limit the kernel reclaims,
// then OOM-kills the process. Both cgroup v1 (a "memory" hierarchy) and v2
// (a unified hierarchy with the memory controller) are served.
type memcg struct {
	dir string
	v2  bool
}

// memcgRoot finds a hierarchy this process may make memory cgroups in, or
// says why there is none.
func memcgRoot() (dir string, v2 bool, err error) {
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err == nil {
		return "/sys/fs/cgroup/memory", false, nil
	}
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		b, err := os.ReadFile(filepath.Join(root, "cgroup.subtree_control"))
		if err == nil && strings.Contains(string(b), "memory") {
			return root, true, nil
		}
	}
	return "", false, errors.New("no cgroup v1 memory hierarchy at /sys/fs/cgroup/memory and no cgroup v2 hierarchy with the memory controller enabled")
}

// newMemcg makes the cgroup name with the given limit, in bytes, and no swap
// beyond it.
func newMemcg(name string, limit int64) (*memcg, error) {
	root, v2, err := memcgRoot()
	if err != nil {
		return nil, err
	}
	staleOnce.Do(func() { removeStaleMemcgs(root) })
	m := &memcg{dir: filepath.Join(root, memcgPrefix+name), v2: v2}
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		return nil, fmt.Errorf("make memory cgroup (the suite needs root): %w", err)
	}
	files := map[string]string{"memory.limit_in_bytes": strconv.FormatInt(limit, 10)}
	if v2 {
		files = map[string]string{"memory.max": strconv.FormatInt(limit, 10), "memory.swap.max": "0"}
	}
	for file, value := range files {
		if err := os.WriteFile(filepath.Join(m.dir, file), []byte(value), 0o644); err != nil && !(v2 && file == "memory.swap.max") {
			m.remove()
			return nil, fmt.Errorf("set %s of %s: %w", file, m.dir, err)
		}
	}
	return m, nil
}

// staleOnce removes an earlier run's cgroups once, before this run makes
// its own (which are empty too until their replica has entered).
var staleOnce sync.Once

// removeStaleMemcgs removes the empty cgroups an earlier run left.
func removeStaleMemcgs(root string) {
	dirs, _ := filepath.Glob(filepath.Join(root, memcgPrefix+"*"))
	for _, d := range dirs {
		_ = os.Remove(d) // fails, harmlessly, while a process is in it
	}
}

// procsFile is where a process is moved into the cgroup.
func (m *memcg) procsFile() string { return filepath.Join(m.dir, "cgroup.procs") }

// peak is the most memory the cgroup's processes used at once.
func (m *memcg) peak() (int64, error) {
	file := "memory.max_usage_in_bytes"
	if m.v2 {
		file = "memory.peak"
	}
	return m.readInt(file)
}

// oomKills is how many processes the kernel killed in the cgroup for want of
// memory.
func (m *memcg) oomKills() (int64, error) {
	file := "memory.oom_control"
	if m.v2 {
		file = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(m.dir, file))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "oom_kill "); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("%s of %s has no oom_kill line", file, m.dir)
}

func (m *memcg) readInt(file string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(m.dir, file))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// remove deletes the cgroup once its processes are gone (the kernel refuses
// while one is left; a few tries cover a process still being reaped).
func (m *memcg) remove() {
	for range 50 {
		if err := os.Remove(m.dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wrapper writes a script that enters the cgroup and then runs bin with the
// script's arguments, so that the replica is limited from its first
// allocation on.
func (m *memcg) wrapper(dir, bin string) (string, error) {
	script := filepath.Join(dir, filepath.Base(m.dir)+".sh")
	body := fmt.Sprintf("#!/bin/sh\necho $$ > %q || exit 1\nexec %q \"$@\"\n", m.procsFile(), bin)
	return script, os.WriteFile(script, []byte(body), 0o755)
}
