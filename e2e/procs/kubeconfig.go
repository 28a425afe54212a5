package procs

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/ringfire/ringfire/deploy"
)

// ServiceAccountKubeconfig writes into dir a kubeconfig of ringfire's
// ServiceAccount on the cluster admin reaches (its RBAC installed), for
// replicas run as processes with only the ClusterRole's permissions, and
// returns its path.
func ServiceAccountKubeconfig(tb testing.TB, admin *rest.Config, dir string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sa, err := deploy.ServiceAccountConfig(ctx, admin, 2*3600)
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := deploy.Kubeconfig(sa)
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, "ringfire-serviceaccount.kubeconfig")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}
