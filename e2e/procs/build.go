package procs

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Build builds cmd/ringfire of the working tree into a temporary directory
// that lives as long as tb, logs the commit it was built from, and returns
// the binary's path. The binary is built without -race: it is the system
// under test, not the test.
func Build(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "ringfire")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/ringfire/ringfire/cmd/ringfire").CombinedOutput()
	if err != nil {
		tb.Fatalf("go build ./cmd/ringfire: %v\n%s", err, out)
	}
	tb.Logf("ringfire built from %s", Revision())
	return bin
}

// Revision names the commit of the working tree, and whether tracked files
// differed from it, so that a result can be traced to the code it ran.
func Revision() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	head, err := exec.CommandContext(ctx, "git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "an unknown commit (git: " + err.Error() + ")"
	}
	rev := "commit " + strings.TrimSpace(string(head))
	if changed, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(changed) > 0 {
		rev += " with uncommitted changes to tracked files"
	}
	return rev
}
