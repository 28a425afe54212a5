package devcluster

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The cleanup of what real nodes left on this machine: their processes and
// cgroups, containerd shims, mounts, iptables chains and rules, the bridge
// probe's namespaces and the bridge.

// cleanNodeHost removes what real nodes of this machine left: their pods'
// processes (everything in the node cgroup) and the cgroups, the containerd
// shims of their node directories, the mounts under those directories
// (container root filesystems, network namespaces, secret volumes), the
// iptables chains of kube-proxy and the kubelet, the FORWARD rule that let
// the bridge's traffic through, the bridge probe's namespaces, and the
// bridge. Only the
// holder of the node lock calls it, after its own containerd and kubelet
// stopped (or before they start), so nothing found is in use. Safe to call
// when nothing is left.
func cleanNodeHost(warn func(string, ...any)) {
	hier := cgroupHierarchies()
	// A few rounds catch children forked while the tree was walked.
	for range 5 {
		n := 0
		for _, h := range hier {
			n += killCgroupTree(filepath.Join(h, nodeCgroup))
		}
		if n == 0 {
			break
		}
	}
	killNodeShims()
	for _, h := range hier {
		removeCgroupTree(filepath.Join(h, nodeCgroup))
	}
	unmountNodeDirs(warn)
	flushKubeChains(warn)
	nodeProbe.remove()
	if _, err := exec.LookPath("iptables"); err == nil {
		disallowBridge("iptables", nodeBridge, warn)
	}
	if _, err := net.InterfaceByName(nodeBridge); err == nil {
		if err := run("ip", "link", "del", nodeBridge); err != nil {
			warn("remove the node's bridge", "error", err)
		}
	}
}

// nodeRootOf returns the marked node directory path lies in, or "".
func nodeRootOf(path string) string {
	for d := filepath.Dir(path); d != "/" && d != "."; d = filepath.Dir(d) {
		if filepath.Base(d) == "node" {
			if _, err := os.Stat(filepath.Join(d, nodeMarker)); err == nil {
				return d
			}
		}
	}
	return ""
}

// unmountNodeDirs unmounts every mount point inside a marked node directory,
// deepest first.
func unmountNodeDirs(warn func(string, ...any)) {
	for range 3 {
		var mounts []string
		for _, mp := range mountPoints() {
			if nodeRootOf(mp) != "" {
				mounts = append(mounts, mp)
			}
		}
		if len(mounts) == 0 {
			return
		}
		for i := len(mounts) - 1; i >= 0; i-- {
			if err := syscall.Unmount(mounts[i], syscall.MNT_DETACH); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
				warn("unmount", "path", mounts[i], "error", err)
			}
		}
	}
}

// mountPoints lists the machine's mount points in mount order.
func mountPoints() []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		out = append(out, unescapeMount(f[4]))
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupHierarchies are the mounted cgroup v1 hierarchies the kubelet uses.
func cgroupHierarchies() []string {
	var out []string
	for _, name := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "blkio", "devices", "freezer", "hugetlb", "systemd"} {
		p := filepath.Join("/sys/fs/cgroup", name)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			out = append(out, p)
		}
	}
	return out
}

// killCgroupTree sends SIGKILL to every process in the cgroup and below it
// and returns how many it found.
func killCgroupTree(root string) int {
	n := 0
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				n++
			}
		}
		return nil
	})
	return n
}

// removeCgroupTree removes the (empty) cgroups under root, children first.
func removeCgroupTree(root string) {
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = syscall.Rmdir(dirs[i])
	}
}

// killNodeShims kills the containerd-shim-runc-v2 processes of the node
// directories' containerd (their -address is a socket in one): a shim holds
// its containers' state for as long as it lives.
func killNodeShims() {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		if len(args) == 0 || filepath.Base(args[0]) != "containerd-shim-runc-v2" {
			continue
		}
		for i, a := range args {
			if a == "-address" && i+1 < len(args) && nodeRootOf(args[i+1]) != "" {
				if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	}
}

// flushKubeChains removes the iptables chains of kube-proxy and the kubelet
// (KUBE-*), IPv4 and IPv6, as `kube-proxy --cleanup` would: the jumps to them
// from the built-in chains, then the chains.
func flushKubeChains(warn func(string, ...any)) {
	for _, family := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(family); err == nil {
			flushKubeChainsOf(family, warn)
		}
	}
}

func flushKubeChainsOf(iptables string, warn func(string, ...any)) {
	for _, table := range []string{"nat", "filter", "mangle"} {
		out, err := exec.Command(iptables+"-save", "-t", table).Output()
		if err != nil {
			continue
		}
		var rules []string
		var chains []string
		for _, line := range strings.Split(string(out), "\n") {
			switch {
			case strings.HasPrefix(line, ":KUBE-"):
				chains = append(chains, strings.Fields(line[1:])[0])
			case strings.HasPrefix(line, "-A ") && strings.Contains(line, "-j KUBE-") && !strings.HasPrefix(line, "-A KUBE-"):
				rules = append(rules, line)
			}
		}
		for _, r := range rules {
			args := append([]string{"-t", table, "-D"}, saveFields(strings.TrimPrefix(r, "-A "))...)
			if err := run(iptables, args...); err != nil {
				warn("remove a kube-proxy rule", "rule", r, "error", err)
			}
		}
		for _, ch := range chains {
			_ = run(iptables, "-t", table, "-F", ch)
		}
		for _, ch := range chains {
			_ = run(iptables, "-t", table, "-X", ch)
		}
	}
}

// saveFields splits a rule as iptables-save prints it into arguments: on
// spaces, except inside double quotes, which it drops (comments are quoted).
func saveFields(rule string) []string {
	var out []string
	var cur strings.Builder
	quoted, have := false, false
	for i := 0; i < len(rule); i++ {
		ch := rule[i]
		switch {
		case ch == '\\' && quoted && i+1 < len(rule):
			i++
			cur.WriteByte(rule[i])
		case ch == '"':
			quoted, have = !quoted, true
		case ch == ' ' && !quoted:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(ch)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}
