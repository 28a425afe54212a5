package policycheck

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
)

// On a real API server: with deploy/crds installed nothing is missing; a policy deleted is
// missing, in the gauge and the answer, and no longer once installed again.
func TestCheckFindsAMissingPolicy(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := crds.Install(ctx, c.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	client := dynamic.NewForConfigOrDie(c.RESTConfig())
	reg := prometheus.NewRegistry()
	checker, err := New(client, discovery.NewDiscoveryClientForConfigOrDie(c.RESTConfig()), reg, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	missing, err := checker.Check(ctx)
	if err != nil || len(missing) != 0 {
		t.Fatalf("after the install: missing %v, error %v", missing, err)
	}
	const gone = "ValidatingAdmissionPolicy/ringfire-queue-command"
	var policy crds.Policy
	for _, p := range checker.want {
		if p.Kind+"/"+p.Name == gone {
			policy = p
		}
	}
	if policy.Name == "" {
		t.Fatalf("no %s among the policies %v", gone, checker.want)
	}
	if err := client.Resource(policy.Resource).Delete(ctx, policy.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	missing, err = checker.Check(ctx)
	if err != nil || !slices.Equal(missing, []string{gone}) {
		t.Fatalf("after deleting it: missing %v, error %v; want [%s]", missing, err, gone)
	}
	if v := testutil.ToFloat64(checker.gauge.WithLabelValues(gone)); v != 1 {
		t.Errorf("%s{policy=%q} = %v, want 1", Metric, gone, v)
	}
	if err := crds.Install(ctx, c.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	if missing, err = checker.Check(ctx); err != nil || len(missing) != 0 {
		t.Errorf("installed again: missing %v, error %v", missing, err)
	}
	if v := testutil.ToFloat64(checker.gauge.WithLabelValues(gone)); v != 0 {
		t.Errorf("%s{policy=%q} = %v once installed again, want 0", Metric, gone, v)
	}
}
