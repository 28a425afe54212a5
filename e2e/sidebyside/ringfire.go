package sidebyside

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/deploy"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/internal/localetcd"
)

// RingfireReplicas is how many replicas the ringfire side runs.
const RingfireReplicas = 3

// StartRingfire starts a control plane and three replicas of bin (see
// procs.Build) on a ring etcd of their own, as `ringfire dev up` runs them:
// every controller and the gang scheduler, as ringfire's ServiceAccount with
// the ClusterRole of deploy/ringfire. It returns once the replicas share the
// ring, and stops everything when the test ends.
func StartRingfire(t testing.TB, bin string) *Env {
	t.Helper()
	env := startControlPlane(t, "ringfire")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := deploy.InstallRBAC(ctx, env.Cluster.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	sa, err := deploy.ServiceAccountConfig(ctx, env.Cluster.RESTConfig(), 2*3600)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := deploy.Kubeconfig(sa)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfigPath := filepath.Join(env.LogDir, "ringfire-serviceaccount.kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	ring := localetcd.StartForTest(t)
	args := procs.Args{
		Bin: bin, Etcd: ring.Endpoint(), Kubeconfig: kubeconfigPath, LogDir: env.LogDir,
		Controllers: "job,queue,podgroup,cronjob,jobflow,scheduler", Slots: 256,
	}
	if os.Getenv("RINGFIRE_E2E_DEBUG") != "" { // as e2e/stack: the replicas log at debug level
		args.LogLevel = "debug"
	}
	var replicas []*procs.Replica
	t.Cleanup(func() {
		procs.StopAll(t, replicas)
		if t.Failed() { // to stderr, ahead of the failures (see cluster.StartForTest)
			for _, r := range replicas {
				fmt.Fprintf(os.Stderr, "=== %s failed: replica %s log tail:\n%s\n", t.Name(), r.ID, r.LogTail(40))
			}
		}
	})
	for i := range RingfireReplicas {
		replicas = append(replicas, procs.Start(t, args, fmt.Sprintf("r%d", i)))
	}
	if err := procs.WaitRing(ctx, replicas, time.Minute); err != nil {
		t.Fatal(err)
	}
	return env
}
