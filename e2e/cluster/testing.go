package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// E2EEnv names the environment variable that makes a missing tools directory
// a test failure instead of a skip. `make test` sets it, so CI cannot pass by
// skipping the end-to-end tests.
const E2EEnv = "RINGFIRE_E2E"

// RequireTools skips the test when the tools are not built, or fails it when
// $RINGFIRE_E2E=1 says they must be. It returns the tools directory.
func RequireTools(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(ToolsBinEnv)
	if dir != "" {
		return dir
	}
	msg := "$" + ToolsBinEnv + " is not set: run the end-to-end tests with `make test`, " +
		"or build the tools with `make tools` and export " + ToolsBinEnv + " to the directory it prints"
	if os.Getenv(E2EEnv) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// StartForTest starts a cluster for one test and stops it when the test ends.
// If the test failed, the tail of every component log goes to the test log.
func StartForTest(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.ToolsBin == "" {
		opts.ToolsBin = RequireTools(t)
	}
	c, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpTails(t, c)
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stop cluster: %v", err)
		}
	})
	return c
}

// Shared is one cluster for a whole test package, started by the first test
// that asks for it. Stop it from TestMain after m.Run:
//
//	var shared cluster.Shared
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		shared.Stop()
//		os.Exit(code)
//	}
type Shared struct {
	Options Options

	once    sync.Once
	cluster *Cluster
	err     error
}

// Get returns the package's cluster, starting it on first use. A start
// failure fails every test that asks.
func (s *Shared) Get(t testing.TB) *Cluster {
	t.Helper()
	opts := s.Options
	if opts.ToolsBin == "" {
		opts.ToolsBin = RequireTools(t)
	}
	s.once.Do(func() {
		s.cluster, s.err = Start(context.Background(), opts)
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpTails(t, s.cluster)
		}
	})
	return s.cluster
}

// Stop stops the cluster if one was started.
func (s *Shared) Stop() error {
	if s.cluster == nil {
		return nil
	}
	return s.cluster.Stop()
}

// dumpTails writes the tail of every component log for a failed test to
// standard error, not to the test log: `go test` prints a test's log after its
// subtests' failures, so a long dump there would push the failures out of the
// last lines a CI report shows. Written now, the dump comes before them.
func dumpTails(t testing.TB, c *Cluster) {
	fmt.Fprintf(os.Stderr, "=== %s failed; the control plane's logs follow, then the failures\n%s\n=== end of the control plane's logs for %s\n",
		t.Name(), c.LogTails(), t.Name())
}

// HelmEnv is the environment of a helm command whose configuration, cache
// and data live under home, so that it reads and writes nothing of the
// user's.
func HelmEnv(home string) []string {
	return append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
}
