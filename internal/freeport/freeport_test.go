package freeport

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

func TestPickIsBelowTheEphemeralRangeAndNeverTwice(t *testing.T) {
	// The kernel's ephemeral range, read here rather than through window.
	first, last := 32768, 60999
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if _, err := fmt.Sscan(string(data), &first, &last); err != nil {
			t.Fatalf("ip_local_port_range %q: %v", data, err)
		}
	}
	ports, err := PickN(50)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p >= first && p <= last {
			t.Errorf("port %d inside the ephemeral range [%d, %d]", p, first, last)
		}
		if p >= 30000 && p <= 32767 {
			t.Errorf("port %d among Kubernetes' NodePorts", p)
		}
		if seen[p] {
			t.Errorf("port %d handed out twice", p)
		}
		seen[p] = true
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])))
	if err != nil {
		t.Fatalf("a picked port does not bind: %v", err)
	}
	defer l.Close()
	_, err = net.Listen("tcp", l.Addr().String())
	if !InUse(err) {
		t.Errorf("InUse(%v) = false for a bound port", err)
	}
	if InUse(fmt.Errorf("start: %w", net.ErrClosed)) {
		t.Error("InUse is true for an error that is not a taken port")
	}
}

// A port another process claimed is not claimed again until that claim
// ends. An flock conflicts between open files even in one process, so an
// open file of the test's own stands for the other process.
func TestClaimedPortIsNotPickedByAnother(t *testing.T) {
	const port = 29999
	dir := filepath.Join(os.TempDir(), "ringfire-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	other, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Skipf("port %d claimed by a process of this machine already: %v", port, err)
	}
	if f, ok := claimPort(port); ok {
		release(f)
		t.Fatal("a port another process holds was claimed")
	}
	other.Close() // the other process ends
	f, ok := claimPort(port)
	if !ok || f == nil {
		t.Fatal("a port no one holds was not claimed")
	}
	release(f)
}
