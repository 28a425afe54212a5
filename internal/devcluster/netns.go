package devcluster

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// inNetns runs f on a thread of its own in the named network namespace (ip
// netns's, under /run/netns) and returns its result: a socket f opens stays
// in that namespace, whichever thread uses it afterwards. The thread is
// never unlocked, so it ends with its goroutine and no other goroutine runs
// in the namespace.
func inNetns[T any](name string, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		var zero T
		fd, err := unix.Open("/run/netns/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- result{zero, err}
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			done <- result{zero, err}
			return
		}
		v, err := f()
		done <- result{v, err}
	}()
	r := <-done
	return r.v, r.err
}
