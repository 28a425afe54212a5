package sidebyside

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
)

// KeepEnv names an environment variable: set to a directory, each side's
// control plane state and every process's log stay there (one subdirectory
// per test and side) for a look afterwards; else they go with the test.
const KeepEnv = "SIDEBYSIDE_DIR"

// Nodes is how many fake nodes each control plane has: four, as in the
// kind cluster Volcano's own end-to-end suites run on.
const Nodes = 4

// Env is one control plane with the Volcano API on it (ringfire's CRDs and
// admission policies, the default Queue) and one implementation of the
// Volcano controllers and scheduler running against it: real Volcano or
// ringfire.
type Env struct {
	Name    string // "volcano" or "ringfire"
	Cluster *cluster.Cluster
	Kube    kubernetes.Interface
	Volcano vcclient.Interface
	Dynamic dynamic.Interface
	// LogDir holds the logs of the processes the side runs.
	LogDir string
}

// startControlPlane starts a control plane for side name, with ringfire's
// CRDs installed as every suite installs them, and stops it when the test
// ends.
func startControlPlane(t testing.TB, name string) *Env {
	t.Helper()
	logDir, clusterDir := dirs(t, name)
	log := hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Warn, Output: os.Stderr})
	cl := cluster.StartForTest(t, cluster.Options{Nodes: Nodes, Dir: clusterDir, Logger: log.Named("cluster")})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := crds.Install(ctx, cl.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	// The test's own clients watch and poll every Job of every scenario: no
	// client-side limiter should pace them.
	cfg := cl.RESTConfig()
	cfg.QPS, cfg.Burst = 500, 1000
	return &Env{
		Name: name, Cluster: cl, LogDir: logDir,
		Kube:    kubernetes.NewForConfigOrDie(cfg),
		Volcano: vcclient.NewForConfigOrDie(cfg),
		Dynamic: dynamic.NewForConfigOrDie(cfg),
	}
}

// dirs returns where side's processes log and where its control plane keeps
// its state ("" for a temporary directory of the harness's).
func dirs(t testing.TB, side string) (logDir, clusterDir string) {
	keep := os.Getenv(KeepEnv)
	if keep == "" {
		return t.TempDir(), ""
	}
	logDir = filepath.Join(keep, filepath.FromSlash(t.Name()), side)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return logDir, filepath.Join(logDir, "cluster")
}
