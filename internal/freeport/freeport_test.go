package freeport

import (
	"fmt"
	"net"
	"strconv"
	"testing"
)

func TestPickIsBelowTheEphemeralRangeAndNeverTwice(t *testing.T) {
	lo, hi := window()
	ports, err := PickN(50)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lo || p >= hi {
			t.Errorf("port %d outside [%d, %d)", p, lo, hi)
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
