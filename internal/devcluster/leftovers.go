package devcluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pidPath is where a running component's process id is recorded, so that
// StopDir can find a cluster whose owner is gone.
func pidPath(dir string, name Component) string {
	return filepath.Join(dir, string(name)+".pid")
}

func writePID(dir string, name Component, pid int) error {
	return os.WriteFile(pidPath(dir, name), []byte(strconv.Itoa(pid)+"\n"), 0o644)
}

// StopDir stops the components of a cluster left running in dir by a process
// that no longer manages it (the case for `ringfire dev down`). It stops only
// processes whose command line names dir, so a recycled process id is left
// alone. It is a no-op for a directory without such processes.
func StopDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	var errs []error
	for i := len(allComponents) - 1; i >= 0; i-- {
		if err := stopRecorded(abs, allComponents[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func stopRecorded(dir string, name Component) error {
	path := pidPath(dir, name)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return fmt.Errorf("%s: not a process id: %q", path, data)
	}
	if belongsTo(pid, dir) {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		deadline := time.Now().Add(stopGrace)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		for alive(pid) && time.Now().Before(deadline.Add(5*time.Second)) {
			time.Sleep(50 * time.Millisecond)
		}
		if alive(pid) {
			return fmt.Errorf("stop %s (pid %d): still running after SIGKILL", name, pid)
		}
	}
	return os.Remove(path)
}

// belongsTo reports whether process pid was started for the cluster in dir:
// every component's flags name a file in its state directory.
func belongsTo(pid int, dir string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return bytes.Contains(cmdline, []byte(dir+string(filepath.Separator)))
}

// alive reports whether pid exists and is not a zombie waiting to be reaped.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state letter follows the parenthesised command name.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}
