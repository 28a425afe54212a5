package stack

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// portUsers names, for a failure message, the processes of this machine
// connected to the loopback port of endpoint (a URL), and the process that
// claims the port in freeport's directory: a ring member from outside the
// stack is a client of another process, and this says which. It reads
// /proc only; what it cannot read it leaves out.
func portUsers(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return ""
	}
	inodes := map[string]bool{} // sockets connected to the port
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "01" { // 01: ESTABLISHED
				continue
			}
			_, remPort, ok := strings.Cut(fields[2], ":")
			if p, err := strconv.ParseInt(remPort, 16, 32); ok && err == nil && int(p) == port {
				inodes[fields[9]] = true
			}
		}
		f.Close()
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var lines []string
	for _, dir := range procs {
		fds, _ := filepath.Glob(filepath.Join(dir, "fd", "*"))
		n := 0
		for _, fd := range fds {
			link, err := os.Readlink(fd)
			if err == nil && strings.HasPrefix(link, "socket:[") && inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				n++
			}
		}
		if n > 0 {
			lines = append(lines, fmt.Sprintf("  pid %s (%s), connections: %d", filepath.Base(dir), cmdline(dir), n))
		}
	}
	slices.Sort(lines)
	out := fmt.Sprintf("processes connected to 127.0.0.1:%d (this test is pid %d):", port, os.Getpid())
	if len(lines) == 0 {
		out += " none seen"
	} else {
		out += "\n" + strings.Join(lines, "\n")
	}
	return out + "\n" + portClaim(port)
}

// portClaim names the process holding freeport's flock on port.
func portClaim(port int) string {
	var st syscall.Stat_t
	file := filepath.Join(os.TempDir(), "ringfire-ports", strconv.Itoa(port))
	if err := syscall.Stat(file, &st); err != nil {
		return fmt.Sprintf("port %d claimed by: %v", port, err)
	}
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return fmt.Sprintf("port %d claimed by: %v", port, err)
	}
	var holders []string
	for line := range strings.Lines(string(locks)) {
		// 1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF
		fields := strings.Fields(line)
		if len(fields) < 6 || fields[1] != "FLOCK" {
			continue
		}
		parts := strings.Split(fields[5], ":")
		if ino, err := strconv.ParseUint(parts[len(parts)-1], 10, 64); err == nil && ino == st.Ino {
			holders = append(holders, fmt.Sprintf("pid %s (%s)", fields[4], cmdline("/proc/"+fields[4])))
		}
	}
	if len(holders) == 0 {
		return fmt.Sprintf("port %d claimed by: no process", port)
	}
	return fmt.Sprintf("port %d claimed by: %s", port, strings.Join(holders, ", "))
}

// cmdline is the command line of the process at /proc/<pid>, shortened.
func cmdline(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil {
		return "?"
	}
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
