package standin

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
)

// StartForTest readies cl for Volcano Jobs: it installs ringfire's CRDs and
// admission policies and runs the stand-in on cl's nodes until the test ends.
// It returns the admin's clients, limited to qps requests a second, for the
// test's own requests.
func StartForTest(t testing.TB, cl *cluster.Cluster, qps float32) (kubernetes.Interface, vcclient.Interface) {
	t.Helper()
	installCtx, installed := context.WithTimeout(context.Background(), time.Minute)
	defer installed()
	if err := crds.Install(installCtx, cl.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	cfg := cl.RESTConfig()
	cfg.QPS, cfg.Burst = qps, int(qps)
	kube, vc := kubernetes.NewForConfigOrDie(cfg), vcclient.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); Run(ctx, kube, vc, cl.NodeNames()) }()
	t.Cleanup(func() { cancel(); <-done })
	return kube, vc
}
