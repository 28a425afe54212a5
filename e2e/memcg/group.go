package memcg

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

// Prefix starts the name of every cgroup the package makes, so that a run
// killed before its cleanup leaves nothing a later run cannot find.
const Prefix = "ringfire-e2e-"

// Group is a memory cgroup of the suite's own, limiting one replica as a
// container runtime limits a container: past the limit the kernel reclaims,
// then OOM-kills the process. Both cgroup v1 (a "memory" hierarchy) and v2
// (a unified hierarchy with the memory controller) are served.
type Group struct {
	dir string
	v2  bool
}

// root finds a hierarchy this process may make memory cgroups in, or says
// why there is none.
func root() (dir string, v2 bool, err error) {
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

// New makes the cgroup name with the given limit, in bytes, and no swap
// beyond it. The name must be unique on the machine (put the process id in
// it); the first New of a run removes the empty cgroups earlier runs left.
func New(name string, limit int64) (*Group, error) {
	root, v2, err := root()
	if err != nil {
		return nil, err
	}
	staleOnce.Do(func() { removeStale(root) })
	g := &Group{dir: filepath.Join(root, Prefix+name), v2: v2}
	if err := os.Mkdir(g.dir, 0o755); err != nil {
		return nil, fmt.Errorf("make memory cgroup (the suite needs root): %w", err)
	}
	files := map[string]string{"memory.limit_in_bytes": strconv.FormatInt(limit, 10)}
	if v2 {
		files = map[string]string{"memory.max": strconv.FormatInt(limit, 10), "memory.swap.max": "0"}
	}
	for file, value := range files {
		if err := os.WriteFile(filepath.Join(g.dir, file), []byte(value), 0o644); err != nil && !(v2 && file == "memory.swap.max") {
			g.Remove()
			return nil, fmt.Errorf("set %s of %s: %w", file, g.dir, err)
		}
	}
	return g, nil
}

// staleOnce removes an earlier run's cgroups once, before this run makes
// its own (which are empty too until their replica has entered).
var staleOnce sync.Once

// removeStale removes the empty cgroups an earlier run left.
func removeStale(root string) {
	dirs, _ := filepath.Glob(filepath.Join(root, Prefix+"*"))
	for _, d := range dirs {
		_ = os.Remove(d) // fails, harmlessly, while a process is in it
	}
}

// Name is the cgroup's directory name.
func (g *Group) Name() string { return filepath.Base(g.dir) }

// procsFile is where a process is moved into the cgroup.
func (g *Group) procsFile() string { return filepath.Join(g.dir, "cgroup.procs") }

// Peak is the most memory the cgroup's processes used at once, over every
// process that has run in it.
func (g *Group) Peak() (int64, error) {
	file := "memory.max_usage_in_bytes"
	if g.v2 {
		file = "memory.peak"
	}
	return g.readInt(file)
}

// Usage is the memory the cgroup's processes use now.
func (g *Group) Usage() (int64, error) {
	file := "memory.usage_in_bytes"
	if g.v2 {
		file = "memory.current"
	}
	return g.readInt(file)
}

// OOMKills is how many processes the kernel killed in the cgroup for want
// of memory.
func (g *Group) OOMKills() (int64, error) {
	file := "memory.oom_control"
	if g.v2 {
		file = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(g.dir, file))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "oom_kill "); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("%s of %s has no oom_kill line", file, g.dir)
}

func (g *Group) readInt(file string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(g.dir, file))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// Remove deletes the cgroup once its processes are gone (the kernel refuses
// while one is left; a few tries cover a process still being reaped).
func (g *Group) Remove() {
	for range 50 {
		if err := os.Remove(g.dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Wrapper writes a script into dir that enters the cgroup and then runs bin
// with the script's arguments, so that the process is limited from its first
// allocation on; a process started again through it enters the same cgroup.
func (g *Group) Wrapper(dir, bin string) (string, error) {
	script := filepath.Join(dir, g.Name()+".sh")
	body := fmt.Sprintf("#!/bin/sh\necho $$ > %q || exit 1\nexec %q \"$@\"\n", g.procsFile(), bin)
	return script, os.WriteFile(script, []byte(body), 0o755)
}
