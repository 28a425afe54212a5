package freeport

import (
	"fmt"
	"net"
	"os"
	"strconv"
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
