package devcluster

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// inNetns runs f on its goroutine's thread switched into the named network
// namespace (ip netns's, under /run/netns), and returns its result: a socket
// f opens stays in that namespace, whichever thread uses it afterwards.
//
// The thread is switched back and unlocked afterwards, not left to end with
// the goroutine: it may be the thread that forked one of the cluster's
// processes, whose parent-death signal (Pdeathsig) fires when that thread
// exits. Only if the switch back fails does the thread stay locked and end.
func inNetns[T any](name string, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		var zero T
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{zero, fmt.Errorf("this thread's network namespace: %w", err)}
			return
		}
		defer unix.Close(orig)
		fd, err := unix.Open("/run/netns/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{zero, err}
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{zero, fmt.Errorf("enter %s: %w", name, err)}
			return
		}
		v, err := f()
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- result{v, err}
	}()
	r := <-done
	return r.v, r.err
}
