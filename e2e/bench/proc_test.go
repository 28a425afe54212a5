package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat;
// Linux fixes it at 100 for user space on every architecture Go supports.
const clockTicks = 100

// procUsage is what /proc tells about one process.
type procUsage struct {
	cpuSeconds float64 // user + system time since the process started
	peakRSS    float64 // VmHWM, bytes: the highest resident set size so far
	rss        float64 // VmRSS, bytes
}

// readProc reads the CPU time and resident memory of process pid.
func readProc(pid int) (procUsage, error) {
	var u procUsage
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// count fields from the last ')'. utime and stime are fields 14 and 15.
	s := string(stat)
	rest := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(rest) < 13 {
		return u, fmt.Errorf("/proc/%d/stat: %d fields after the command name", pid, len(rest))
	}
	utime, err1 := strconv.ParseFloat(rest[11], 64)
	stime, err2 := strconv.ParseFloat(rest[12], 64)
	if err1 != nil || err2 != nil {
		return u, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, rest[11], rest[12])
	}
	u.cpuSeconds = (utime + stime) / clockTicks

	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch key {
		case "VmHWM":
			u.peakRSS, err = parseKiB(value)
		case "VmRSS":
			u.rss, err = parseKiB(value)
		}
		if err != nil {
			return u, fmt.Errorf("/proc/%d/status %s: %w", pid, key, err)
		}
	}
	return u, sc.Err()
}

// parseKiB parses a /proc/<pid>/status size such as "  123456 kB" into bytes.
func parseKiB(v string) (float64, error) {
	n, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
	return n * 1024, err
}

// readPIDFile reads a process id recorded in a file.
func readPIDFile(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

const mib = 1 << 20

// machineCPU is the whole machine's CPU time from /proc/stat, in seconds
// summed over all CPUs.
type machineCPU struct {
	busy, total float64
}

// readMachineCPU reads the aggregate "cpu" line of /proc/stat: busy is
// everything but idle and iowait.
func readMachineCPU() (machineCPU, error) {
	var m machineCPU
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return m, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return m, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	for i, f := range fields[1:] {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return m, fmt.Errorf("/proc/stat: %q: %w", f, err)
		}
		if i >= 8 { // guest and guest_nice are already counted in user and nice
			break
		}
		m.total += v / clockTicks
		if i != 3 && i != 4 { // idle, iowait
			m.busy += v / clockTicks
		}
	}
	return m, nil
}

// loadAverage returns the one-minute load average from /proc/loadavg.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
