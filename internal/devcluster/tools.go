package devcluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

//go:generate sh -c "cp ../../e2e/tools/go.mod tools/go.mod.txt && cp ../../e2e/tools/go.sum tools/go.sum.txt && cp ../../e2e/tools/helm/go.mod tools/helm-go.mod.txt && cp ../../e2e/tools/helm/go.sum tools/helm-go.sum.txt && cp ../../e2e/tools/build.sh tools/build.sh.txt"

// The tools modules (e2e/tools: go.mod, go.sum, Helm's helm/go.mod and
// helm/go.sum, and build.sh), copied into this
// package so that a ringfire binary built anywhere carries the pins it was
// built with: a go:embed pattern cannot reach e2e/tools, and cannot embed a
// directory holding a go.mod at all. `go generate ./internal/devcluster`
// refreshes the copies; TestEmbeddedToolsModuleIsE2ETools fails when they
// differ from e2e/tools.
var (
	//go:embed tools/go.mod.txt
	toolsGoMod []byte
	//go:embed tools/go.sum.txt
	toolsGoSum []byte
	//go:embed tools/helm-go.mod.txt
	toolsHelmGoMod []byte
	//go:embed tools/helm-go.sum.txt
	toolsHelmGoSum []byte
	//go:embed tools/build.sh.txt
	toolsBuildScript []byte
)

// ToolsDir is where e2e/tools/build.sh keeps a built set of the pinned
// tools, and so where FindTools looks for one.
type ToolsDir struct {
	Root string // ${XDG_CACHE_HOME:-$HOME/.cache}/ringfire/tools/<key>
	Bin  string // Root/bin, the binaries; what $RINGFIRE_TOOLS_BIN names
}

// Complete reports whether a whole set is there: build.sh writes the stamp
// file beside bin/ only once every tool is built.
func (d ToolsDir) Complete() bool {
	_, err := os.Stat(filepath.Join(d.Root, "stamp"))
	return err == nil
}

// CachedTools returns the directory build.sh uses for the embedded pins and
// the toolchain goVersion names (the output of `go env GOVERSION GOOS
// GOARCH`, newline-terminated lines, as build.sh hashes it). The key is
// computed as build.sh computes it: the first 16 hex digits of the SHA-256 of
// go.mod, go.sum, helm/go.mod, helm/go.sum, build.sh and goVersion, in that
// order.
func CachedTools(goVersion string) (ToolsDir, error) {
	h := sha256.New()
	for _, part := range [][]byte{toolsGoMod, toolsGoSum, toolsHelmGoMod, toolsHelmGoSum, toolsBuildScript, []byte(goVersion)} {
		h.Write(part)
	}
	key := hex.EncodeToString(h.Sum(nil))[:16]
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home := os.Getenv("HOME")
		if home == "" {
			return ToolsDir{}, errors.New("neither $XDG_CACHE_HOME nor $HOME is set: no tools cache to look in")
		}
		cache = filepath.Join(home, ".cache")
	}
	root := filepath.Join(cache, "ringfire", "tools", key)
	return ToolsDir{Root: root, Bin: filepath.Join(root, "bin")}, nil
}

// goEnv is what build.sh hashes besides its files: `go env GOVERSION GOOS
// GOARCH` of the go command on PATH. Without one it is this binary's own
// toolchain, which is what built it and most likely what built the tools.
func goEnv(ctx context.Context) (env string, haveGo bool) {
	if _, err := exec.LookPath("go"); err == nil {
		cmd := exec.CommandContext(ctx, "go", "env", "GOVERSION", "GOOS", "GOARCH")
		// Outside any module, so that no go.mod's toolchain line switches
		// toolchains; build.sh runs it in the tools module, which names none.
		cmd.Dir = os.TempDir()
		if out, err := cmd.Output(); err == nil {
			return string(out), true
		}
	}
	return fmt.Sprintf("%s\n%s\n%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH), false
}

// FindTools returns the directory of the control plane's binaries for
// `ringfire dev up`, and works from an installed binary outside a checkout:
//
//  1. $RINGFIRE_TOOLS_BIN, when set;
//  2. else the set e2e/tools/build.sh keeps in the cache for the pins this
//     binary was built with (the same directory `make tools` prints);
//  3. else it builds that set by running the embedded copy of build.sh in a
//     temporary directory, which takes Go and bash on PATH, network access
//     to the module proxy (or a filled module cache), and several minutes
//     the first time. The build's progress goes to progress.
//
// Without Go or bash it says what to set instead.
func FindTools(ctx context.Context, log hclog.Logger, progress io.Writer) (string, error) {
	if dir := os.Getenv(ToolsBinEnv); dir != "" {
		return dir, nil
	}
	env, haveGo := goEnv(ctx)
	dir, err := CachedTools(env)
	if err != nil {
		return "", fmt.Errorf("%w; set $%s to a directory holding %s", err, ToolsBinEnv, toolNames())
	}
	if dir.Complete() {
		// As build.sh does: mark the set as recently used, so that its
		// pruning of old sets keeps it.
		now := time.Now()
		_ = os.Chtimes(filepath.Join(dir.Root, "stamp"), now, now)
		return dir.Bin, nil
	}
	_, bashErr := exec.LookPath("bash")
	if !haveGo || bashErr != nil {
		return "", fmt.Errorf("the pinned tools (%s) are not built in %s, and building them takes go and bash on PATH: "+
			"install Go %s and run again, or set $%s to a directory holding them (in a ringfire checkout, `make tools` prints one)",
			toolNames(), dir.Bin, goDirective(), ToolsBinEnv)
	}
	log.Info("building the pinned tools into the cache; the first time takes several minutes", "dir", dir.Bin)
	bin, err := buildTools(ctx, progress)
	if err != nil {
		return "", err
	}
	if bin != dir.Bin {
		log.Warn("build.sh used another directory than expected", "expected", dir.Bin, "got", bin)
	}
	return bin, nil
}

// buildTools writes the embedded tools module into a temporary directory,
// runs its build.sh there (every tool, as `make tools` does) and returns the
// bin directory it prints on its last line.
func buildTools(ctx context.Context, progress io.Writer) (string, error) {
	tmp, err := os.MkdirTemp("", "ringfire-tools-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.Mkdir(filepath.Join(tmp, "helm"), 0o755); err != nil {
		return "", err
	}
	for name, data := range map[string][]byte{"go.mod": toolsGoMod, "go.sum": toolsGoSum, "helm/go.mod": toolsHelmGoMod,
		"helm/go.sum": toolsHelmGoSum, "build.sh": toolsBuildScript} {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o755); err != nil {
			return "", err
		}
	}
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(tmp, "build.sh"))
	cmd.Dir = tmp
	cmd.Stderr = progress
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build the pinned tools (e2e/tools/build.sh, embedded): %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	bin := strings.TrimSpace(lines[len(lines)-1])
	if bin == "" {
		return "", errors.New("build the pinned tools: build.sh printed no directory")
	}
	return bin, nil
}

func toolNames() string {
	names := make([]string, len(allComponents))
	for i, c := range allComponents {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// goDirective is the Go version the tools module asks for (its go line).
func goDirective() string {
	for line := range bytes.Lines(toolsGoMod) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(string(line)), "go "); ok {
			return v
		}
	}
	return "(see e2e/tools/go.mod)"
}
