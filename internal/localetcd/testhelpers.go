package localetcd

import (
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TB is the part of testing.TB that StartForTest and ClientForTest use;
// *testing.T and *testing.B satisfy it. It is declared here rather than
// imported so that this package, which the ringfire binary links, does not
// pull the testing package into it.
type TB interface {
	Helper()
	TempDir() string
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// StartForTest starts a local etcd in a temporary directory, stopped when the
// test ends.
func StartForTest(t TB) *Server {
	t.Helper()
	s, err := Start(Options{Dir: t.TempDir(), LogLevel: "error"})
	if err != nil {
		t.Fatalf("local etcd: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// ClientForTest returns a client of endpoint, closed when the test ends.
func ClientForTest(t TB, endpoint string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, Logger: zapNop()})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
