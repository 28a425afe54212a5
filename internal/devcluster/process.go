package devcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long a component gets to exit after SIGTERM before the
// whole process group is killed.
const stopGrace = 10 * time.Second

// process is one running control-plane binary. It runs in a process group of
// its own so that stopping it also stops anything it forked, and it dies with
// the process that started it (Pdeathsig: the test binary, or `ringfire dev
// up`) if that is killed before Stop runs.
//
// Pdeathsig fires when the OS thread that forked the child exits, and Go
// retires a thread only when a goroutine exits while locked to it
// (runtime.LockOSThread): do not start a cluster from such a goroutine.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has been reaped
	waitErr error         // valid after done is closed
	stop    sync.Once
}

// startProcess starts bin with args and env added to this process's
// environment, appending stdout and stderr to logPath.
func startProcess(name, logPath string, env []string, bin string, args ...string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	var withEnv string
	if len(env) > 0 {
		withEnv = fmt.Sprintf(" with %q", env)
	}
	fmt.Fprintf(logFile, "=== %s %s %q%s\n", time.Now().Format(time.RFC3339), bin, args, withEnv)

	cmd := exec.Command(bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		if p.waitErr == nil {
			return true, errors.New("exited with status 0")
		}
		return true, p.waitErr
	default:
		return false, nil
	}
}

// terminate asks the process group to exit, kills it after stopGrace, and
// waits until the process is reaped. Safe to call more than once.
func (p *process) terminate() {
	p.stop.Do(func() {
		p.signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(stopGrace):
			p.signal(syscall.SIGKILL)
			<-p.done
		}
		// Children that ignored SIGTERM must not outlive their leader.
		p.signal(syscall.SIGKILL)
	})
}

// kill ends the process group at once, as a crash would, and waits for it.
func (p *process) kill() {
	p.stop.Do(func() {
		p.signal(syscall.SIGKILL)
		<-p.done
	})
}

func (p *process) signal(sig syscall.Signal) {
	// A negative pid addresses the process group; ESRCH means it is gone.
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
}

// logTail returns the last n lines of the process log, for error messages.
func (p *process) logTail(n int) string {
	return tailFile(p.logPath, n)
}

func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	const maxRead = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > maxRead {
		_, _ = f.Seek(st.Size()-maxRead, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
