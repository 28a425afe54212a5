package stack

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ringfire/ringfire/internal/freeport"
)

// portUsers names this process as connected to a port it dialled, and as
// the claimant of a port freeport gave it.
func TestPortUsersNamesTheProcess(t *testing.T) {
	port, err := freeport.Pick()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	accepted, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer accepted.Close()

	got := portUsers(fmt.Sprintf("http://127.0.0.1:%d", port))
	me := fmt.Sprintf("pid %d (", os.Getpid())
	if !strings.Contains(got, me) || !strings.Contains(got, "connections: 1") {
		t.Errorf("portUsers does not name this process with its one connection:\n%s", got)
	}
	if !strings.Contains(got, fmt.Sprintf("port %d claimed by: %s", port, me)) {
		t.Errorf("portUsers does not name this process as the port's claimant:\n%s", got)
	}
	t.Log(got)
}
