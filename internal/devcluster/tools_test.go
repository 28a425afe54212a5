package devcluster

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// The binary's copy of the tools module must be e2e/tools as it is, or an
// installed ringfire would look for (and build) other pins than `make tools`.
func TestEmbeddedToolsModuleIsE2ETools(t *testing.T) {
	for name, embedded := range map[string][]byte{"go.mod": toolsGoMod, "go.sum": toolsGoSum, "helm/go.mod": toolsHelmGoMod, "helm/go.sum": toolsHelmGoSum, "build.sh": toolsBuildScript} {
		want, err := os.ReadFile(filepath.Join("..", "..", "e2e", "tools", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(embedded, want) {
			t.Errorf("the embedded copy of e2e/tools/%s differs from it: run `go generate ./internal/devcluster`", name)
		}
	}
}

// CachedTools must name the directory build.sh itself computes. The script
// is run with bash -x and an unknown tool name: it computes its cache
// directory, then refuses the name before building anything.
func TestCachedToolsIsWhereBuildScriptPutsThem(t *testing.T) {
	for _, tool := range []string{"bash", "go", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s on PATH", tool)
		}
	}
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	cmd := exec.Command("bash", "-x", filepath.Join("..", "..", "e2e", "tools", "build.sh"), "no-such-tool")
	var trace bytes.Buffer
	cmd.Stderr = &trace
	if err := cmd.Run(); err == nil {
		t.Fatal("build.sh accepted an unknown tool")
	}
	var root string
	for line := range strings.Lines(trace.String()) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "+ root="); ok {
			root = v
		}
	}
	if root == "" {
		t.Fatalf("no root= in build.sh's trace:\n%s", trace.String())
	}
	env, haveGo := goEnv(context.Background())
	if !haveGo {
		t.Fatal("go is on PATH but goEnv did not use it")
	}
	dir, err := CachedTools(env)
	if err != nil {
		t.Fatal(err)
	}
	if dir.Root != root {
		t.Errorf("CachedTools = %s, build.sh uses %s", dir.Root, root)
	}
	if dir.Bin != filepath.Join(root, "bin") {
		t.Errorf("Bin = %s, want %s/bin", dir.Bin, root)
	}
}

func TestFindToolsPrefersTheEnvironment(t *testing.T) {
	t.Setenv(ToolsBinEnv, "/somewhere/bin")
	got, err := FindTools(context.Background(), hclog.NewNullLogger(), nil)
	if err != nil || got != "/somewhere/bin" {
		t.Errorf("FindTools = %q, %v; want $%s", got, err, ToolsBinEnv)
	}
}

func TestFindToolsFindsACompleteSetInTheCache(t *testing.T) {
	t.Setenv(ToolsBinEnv, "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	env, _ := goEnv(context.Background())
	dir, err := CachedTools(env)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir.Bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir.Root, "stamp"), []byte("built\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := FindTools(context.Background(), hclog.NewNullLogger(), nil)
	if err != nil || got != dir.Bin {
		t.Errorf("FindTools = %q, %v; want %s", got, err, dir.Bin)
	}
}

func TestFindToolsWithoutGoSaysWhatToSet(t *testing.T) {
	t.Setenv(ToolsBinEnv, "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("PATH", t.TempDir()) // no go, no bash
	_, err := FindTools(context.Background(), hclog.NewNullLogger(), nil)
	if err == nil {
		t.Fatal("FindTools succeeded with no cached set and no go to build one")
	}
	dir, _ := CachedTools(mustGoEnv(t))
	for _, want := range []string{"$" + ToolsBinEnv, dir.Bin, "install Go"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
}

// mustGoEnv is goEnv with PATH already emptied: this binary's toolchain.
func mustGoEnv(t *testing.T) string {
	t.Helper()
	env, haveGo := goEnv(context.Background())
	if haveGo {
		t.Fatal("found go on an empty PATH")
	}
	return env
}
