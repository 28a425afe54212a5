// Package volcano runs real Volcano beside the tests: where its programs
// (vc-controller-manager, vc-scheduler, vcctl) and its CRDs are, how to
// install those CRDs as a Helm release of Volcano leaves them, and how to
// start and stop its programs as processes of a test.
//
// Volcano is not part of ringfire's build: without its programs (the
// environment variable BinEnv, or the unpack script CI finds beside the
// clone) the tests that need them are skipped.
package volcano

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ringfire/ringfire/e2e/procs"
	runprocs "github.com/ringfire/ringfire/internal/procs"
)

// BinEnv names the environment variable that holds the directory of
// Volcano's programs: vc-controller-manager, vc-scheduler and vcctl.
const BinEnv = "VOLCANO_BIN"

// CRDsEnv names the environment variable that holds the directory of
// Volcano's CRDs (one YAML file per CRD, as Volcano's repository keeps them
// in config/crd/volcano/bases).
const CRDsEnv = "VOLCANO_CRDS"

// VerbosityEnv names an environment variable: a klog level (say 4) for
// Volcano's programs, whose logs then say why they did what they did.
const VerbosityEnv = "SIDEBYSIDE_VOLCANO_V"

// Bin returns the directory of Volcano's programs: $VOLCANO_BIN, else the
// one the project's CI unpacks beside the clone (its unpack script prints it
// on its last line). Without either the test is skipped, whatever
// $RINGFIRE_E2E says.
func Bin(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(BinEnv); dir != "" {
		return dir
	}
	script := filepath.Join(beside(t), "unpack.sh")
	if _, err := os.Stat(script); err != nil {
		t.Skipf("no Volcano programs: set $%s to a directory holding vc-controller-manager, vc-scheduler and vcctl "+
			"(built from github.com/volcano-sh/volcano at the commit docs/conformance.md names)", BinEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, script).Output()
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	dir, err := lastLine(string(out))
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return dir
}

// CRDs returns the directory of Volcano's CRDs: $VOLCANO_CRDS, else the one
// beside the clone. Without either the test is skipped.
func CRDs(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(CRDsEnv); dir != "" {
		return dir
	}
	dir := filepath.Join(beside(t), "crds")
	if _, err := os.Stat(filepath.Join(dir, "batch.volcano.sh_jobs.yaml")); err != nil {
		t.Skipf("no Volcano CRDs: set $%s to a directory holding Volcano's CRD files (config/crd/volcano/bases of its repository)", CRDsEnv)
	}
	return dir
}

// beside is where CI keeps Volcano's programs and CRDs next to the clone.
func beside(t testing.TB) string {
	return filepath.Join(RepoRoot(t), "..", "shared", "volcano")
}

// RepoRoot is the root of ringfire's checkout: the nearest directory above
// the working directory (a test's package directory) holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// SchedulerConf is the vc-scheduler configuration of the project's runs of
// Volcano: the one Volcano's own end-to-end setup uses.
func SchedulerConf(t testing.TB) string {
	return filepath.Join(RepoRoot(t), "e2e", "conformance", "vc-scheduler.conf")
}

// Program is one of Volcano's programs running for a test, in a process
// group of its own, dying with the test process (Pdeathsig).
type Program struct {
	Name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// Start starts Volcano's program name (from bin, see Bin) against the
// cluster of kubeconfig, without leader election, as its admin, serving its
// metrics on a free loopback port, logging to logDir/<name>.log (appended
// to, so that a program started again keeps one log). It is stopped when
// the test ends, if it has not been before; a failed test shows its log's
// tail.
func Start(t testing.TB, bin, logDir, kubeconfig, name string, args ...string) *Program {
	t.Helper()
	port, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args = append(args, "--kubeconfig", kubeconfig, "--leader-elect=false",
		"--listen-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if v := os.Getenv(VerbosityEnv); v != "" {
		args = append(args, "-v", v)
	}
	p, err := startProcess(name, filepath.Join(bin, name), filepath.Join(logDir, name+".log"), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			fmt.Fprintf(os.Stderr, "=== %s failed: %s log tail:\n%s\n", t.Name(), name, runprocs.Tail(p.log, 40))
		}
	})
	return p
}

func startProcess(name, bin, logPath string, args ...string) (*Program, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Program{Name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Stop sends SIGTERM to the program's process group, SIGKILL after 10 s,
// and waits for it to end. Stopping a stopped program does nothing.
func (p *Program) Stop() { p.end(syscall.SIGTERM, 10*time.Second) }

// Kill sends SIGKILL to the program's process group and waits for it to
// end: a crash, not a shutdown.
func (p *Program) Kill() { p.end(syscall.SIGKILL, 0) }

// end sends sig to the program's process group and waits for it to end,
// sending SIGKILL after grace; an ended program is left alone.
func (p *Program) end(sig syscall.Signal, grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// PID is the program's process id.
func (p *Program) PID() int { return p.cmd.Process.Pid }

// Log is the path of the program's log file.
func (p *Program) Log() string { return p.log }

// lastLine is the last non-empty line of s.
func lastLine(s string) (string, error) {
	var last string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			last = l
		}
	}
	if last == "" {
		return "", errors.New("no output")
	}
	return last, nil
}
