package procs

import (
	"os"
	"path/filepath"
	"testing"
)

// Dirs returns where a test's programs log and where its control plane keeps its state: a
// temporary directory of the test's and "" (the harness's own) unless the environment variable
// keepEnv names a directory, in which case <keepEnv>/<test name> and its cluster/, kept after
// the test for reading.
func Dirs(t testing.TB, keepEnv string) (logDir, clusterDir string) {
	t.Helper()
	keep := os.Getenv(keepEnv)
	if keep == "" {
		return t.TempDir(), ""
	}
	logDir = filepath.Join(keep, t.Name())
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return logDir, filepath.Join(logDir, "cluster")
}
