package deploy_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/ringfire/ringfire/deploy"
)

// The API server puts ringfire's requests under its own FlowSchema and priority level: a
// request of ringfire's ServiceAccount comes back with the UIDs of both in the headers API
// Priority and Fairness sets (X-Kubernetes-PF-FlowSchema-UID, X-Kubernetes-PF-PriorityLevel-UID),
// and the FlowSchema tells flows apart by namespace.
func TestFlowSchemaTakesRingfiresRequests(t *testing.T) {
	c := shared.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := deploy.InstallRBAC(ctx, c.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	objs, err := deploy.Objects("ringfire")
	if err != nil {
		t.Fatal(err)
	}
	objs = slices.DeleteFunc(objs, func(o *unstructured.Unstructured) bool {
		return o.GroupVersionKind().Group != "flowcontrol.apiserver.k8s.io"
	})
	if len(objs) != 2 {
		t.Fatalf("%d flow-control objects in deploy/ringfire, want a PriorityLevelConfiguration and a FlowSchema", len(objs))
	}
	if err := deploy.Apply(ctx, c.RESTConfig(), objs, false); err != nil {
		t.Fatal(err)
	}
	admin := kubernetes.NewForConfigOrDie(c.RESTConfig())
	fs, err := admin.FlowcontrolV1().FlowSchemas().Get(ctx, "ringfire", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := admin.FlowcontrolV1().PriorityLevelConfigurations().Get(ctx, "ringfire", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := fs.Spec.DistinguisherMethod; d == nil || d.Type != "ByNamespace" {
		t.Errorf("distinguisher %+v, want ByNamespace", d)
	}

	cfg, err := deploy.ServiceAccountConfig(ctx, c.RESTConfig(), 600)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen http.Header
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil {
				mu.Lock()
				seen = resp.Header.Clone()
				mu.Unlock()
			}
			return resp, err
		})
	})
	kube := kubernetes.NewForConfigOrDie(cfg)
	// The API server's flow-control configuration follows the objects a moment after they
	// are written.
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			t.Fatalf("list pods as %s: %v", deploy.ServiceAccount, err)
		}
		mu.Lock()
		gotFS, gotPL := seen.Get("X-Kubernetes-PF-FlowSchema-UID"), seen.Get("X-Kubernetes-PF-PriorityLevel-UID")
		mu.Unlock()
		if gotFS == string(fs.UID) && gotPL == string(pl.UID) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a request of ringfire's ServiceAccount went to FlowSchema %q and priority level %q, want ringfire's (%s, %s)", gotFS, gotPL, fs.UID, pl.UID)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
