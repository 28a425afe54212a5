// Command capfit is an OCI runtime in front of runc that drops from a
// container's capabilities those the machine's own bounding set lacks, then
// hands over to runc with the same arguments.
//
// Docker engines before 23 give a --privileged container every capability
// they know of, whatever the daemon itself holds; where the machine withholds
// one (CI sandboxes often withhold CAP_SYS_RESOURCE), runc fails with "unable
// to apply caps: operation not permitted", and kind's node containers, which
// are always privileged, never start. Newer engines and containerd fit a
// privileged container to the daemon's bounding set; capfit does the same for
// the older ones. e2e/kind/run.sh starts its dockerd with
// --add-runtime capfit=... --default-runtime capfit when the probe of a
// privileged container fails.
//
//	capfit [runc's global flags] create --bundle DIR ... ID
//
// RINGFIRE_CAPFIT_RUNC names runc (default: runc on PATH).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// capNames are the capabilities by number, as the kernel numbers them.
var capNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE",
	"CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
	"CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT",
	"CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME",
	"CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL",
	"CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
}

func main() {
	runc := os.Getenv("RINGFIRE_CAPFIT_RUNC")
	if runc == "" {
		runc = "runc"
	}
	path, err := exec.LookPath(runc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "capfit:", err)
		os.Exit(1)
	}
	if file, process, ok := specOf(os.Args[1:]); ok {
		held, err := boundingSet()
		if err == nil {
			err = fit(file, process, held)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "capfit:", err)
			os.Exit(1)
		}
	}
	err = syscall.Exec(path, append([]string{path}, os.Args[1:]...), os.Environ())
	fmt.Fprintln(os.Stderr, "capfit: exec", path+":", err)
	os.Exit(1)
}

// specOf returns the file that holds the capabilities of a runc command:
// for create and run, the bundle's config.json (--bundle or -b, else the
// working directory, as runc takes it); for exec, its --process (-p) file,
// a process object alone. Other commands start no process.
func specOf(args []string) (file string, process bool, ok bool) {
	i := slices.IndexFunc(args, func(a string) bool { return a == "create" || a == "run" || a == "exec" })
	if i < 0 {
		return "", false, false
	}
	long, short := "--bundle", "-b"
	if args[i] == "exec" {
		long, short = "--process", "-p"
	}
	for j := i + 1; j < len(args); j++ {
		a := args[j]
		switch {
		case (a == long || a == short) && j+1 < len(args):
			file = args[j+1]
		case strings.HasPrefix(a, long+"="):
			file = strings.TrimPrefix(a, long+"=")
		}
	}
	if args[i] == "exec" {
		// Without --process the command line is the process: runc applies its
		// own defaults, which a privileged container does not widen.
		return file, true, file != ""
	}
	if file == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", false, false
		}
		file = wd
	}
	return filepath.Join(file, "config.json"), false, true
}

// fit rewrites the OCI config (or, if process, the OCI process) at path
// without the capabilities held marks false.
func fit(path string, process bool, held map[string]bool) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var spec map[string]any
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	proc := spec
	if !process {
		proc, _ = spec["process"].(map[string]any)
	}
	caps, _ := proc["capabilities"].(map[string]any)
	if caps == nil {
		return nil
	}
	changed := false
	for set, v := range caps {
		list, _ := v.([]any)
		kept := list[:0:0]
		for _, c := range list {
			name, _ := c.(string)
			if h, known := held[name]; known && !h {
				changed = true
				continue
			}
			kept = append(kept, c)
		}
		caps[set] = kept
	}
	if !changed {
		return nil
	}
	out, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}

// boundingSet is the set of capability names in this process's bounding set
// (CapBnd of /proc/self/status): true if held, false if not. A capability
// the table does not name is newer than it, and left alone by fit.
func boundingSet() (map[string]bool, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		hex, ok := strings.CutPrefix(s.Text(), "CapBnd:")
		if !ok {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("CapBnd %q: %w", hex, err)
		}
		held := map[string]bool{}
		for i, name := range capNames {
			held[name] = mask&(1<<uint(i)) != 0
		}
		return held, nil
	}
	return nil, fmt.Errorf("no CapBnd in /proc/self/status")
}
