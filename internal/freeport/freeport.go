// Package freeport hands out TCP ports on 127.0.0.1 for servers that must
// be told their port before they bind it: the local control plane's
// components, the local etcd, the replicas of the tests.
//
// A port the kernel offers for "127.0.0.1:0" comes from the ephemeral range,
// the same range it takes the local ports of outgoing connections from: in
// the moment between choosing such a port and binding it, any connection
// this machine opens may take it, and the server then fails with "address
// already in use". Ports here are chosen below the ephemeral range, where
// the kernel never binds on its own, and below Kubernetes' NodePorts.
//
// Two processes of this machine that pick at random may pick the same port
// (the many test binaries of one run, each starting control planes): a
// port picked here is also claimed, for the life of the process, with an
// flock on a file named after it in a directory every process shares
// (<temp dir>/ringfire-ports), and a port another live process claimed is
// not picked. The kernel drops the claims of a process that ends. Where the
// directory cannot be made, ports are picked without claims.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// tries bounds the search for one port.
const tries = 200

// handedOut are the ports this process was given: a server started a moment
// ago may not have bound its port yet.
var handedOut sync.Map

// Pick returns a port on 127.0.0.1 that was free a moment ago, lies outside
// the kernel's ephemeral range and was not handed out before in this process.
func Pick() (int, error) {
	lo, hi, ok := theWindow()
	for range tries {
		if !ok {
			port, err := kernelPort()
			if err != nil {
				return 0, err
			}
			if _, taken := handedOut.LoadOrStore(port, true); !taken {
				return port, nil
			}
			continue
		}
		port := lo + rand.IntN(hi-lo)
		if _, taken := handedOut.LoadOrStore(port, true); taken {
			continue
		}
		claim, ok := claimPort(port)
		if !ok {
			continue // another live process has it
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			release(claim)
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port on 127.0.0.1 in [%d, %d) not handed out already, after %d tries", lo, hi, tries)
}

// claims holds the files whose flocks claim this process's ports: kept
// open, and referenced, for as long as the process lives.
var (
	claimsMu sync.Mutex
	claims   []*os.File
)

// claimPort claims port for this process, reporting false when another
// process holds it. With no directory to claim in, every port is claimed.
func claimPort(port int) (*os.File, bool) {
	dir := filepath.Join(os.TempDir(), "ringfire-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, true
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, !errors.Is(err, syscall.EWOULDBLOCK)
	}
	claimsMu.Lock()
	claims = append(claims, f)
	claimsMu.Unlock()
	return f, true
}

// release gives up a claim made by claimPort (nil: none was made).
func release(f *os.File) {
	if f == nil {
		return
	}
	claimsMu.Lock()
	for i, c := range claims {
		if c == f {
			claims = append(claims[:i], claims[i+1:]...)
			break
		}
	}
	claimsMu.Unlock()
	f.Close() // closing the file drops its flock
}

// kernelPort is a port the kernel offers: from its ephemeral range, which an
// outgoing connection may take before the caller binds it.
func kernelPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// PickN returns n distinct ports, as Pick.
func PickN(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		p, err := Pick()
		if err != nil {
			return nil, err
		}
		ports = append(ports, p)
	}
	return ports, nil
}

// InUse reports whether err is a bind that failed because the port was
// taken, so that a caller that picked the port may pick another. It reads
// the message, since not every server wraps the listener's error.
func InUse(err error) bool {
	return err != nil && (errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use"))
}

// theWindow is window, read from the kernel once per process.
func theWindow() (lo, hi int, ok bool) {
	windowOnce.Do(func() { windowLo, windowHi, windowOK = window() })
	return windowLo, windowHi, windowOK
}

var (
	windowOnce         sync.Once
	windowLo, windowHi int
	windowOK           bool
)

// window is the range ports are picked from: below the kernel's ephemeral
// range, from 20000 up to 30000 at most (Kubernetes' NodePorts start at
// 30000, and a node's proxy may redirect them without holding a socket that
// a Listen would find); else, when the ephemeral range leaves too little
// room below it, above the range. ok is false when neither side has room:
// the kernel picks then.
func window() (lo, hi int, ok bool) {
	first, last := 32768, 60999 // Linux's default ephemeral range
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(data)); len(f) == 2 {
			a, errA := strconv.Atoi(f[0])
			b, errB := strconv.Atoi(f[1])
			if errA == nil && errB == nil && a <= b {
				first, last = a, b
			}
		}
	}
	const room = 2000
	if lo, hi = 20000, min(first, 30000); hi-lo >= room {
		return lo, hi, true
	}
	if lo, hi = 1024, min(first, 30000); hi-lo >= room {
		return lo, hi, true
	}
	if lo, hi = last+1, 65536; hi-lo >= room {
		return lo, hi, true
	}
	return 0, 0, false
}
