package kubemetrics

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/tools/metrics"
)

// client-go's hooks reach the registry under component-base's names, with
// its labels.
func TestClientGoMetricsReachPrometheus(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	u := url.URL{Scheme: "https", Host: "10.0.0.1:6443", Path: "/apis/batch.volcano.sh/v1alpha1/jobs"}
	metrics.RequestLatency.Observe(ctx, "POST", u, 20*time.Millisecond)
	metrics.RateLimiterLatency.Observe(ctx, "POST", u, 5*time.Millisecond)
	metrics.RequestResult.Increment(ctx, "201", "POST", "10.0.0.1:6443")

	want := `
# HELP rest_client_requests_total HTTP requests by status code, method and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="201",host="10.0.0.1:6443",method="POST"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), RequestsTotal); err != nil {
		t.Error(err)
	}
	for _, name := range []string{RequestDuration, RateLimiterDuration} {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range families {
			if f.GetName() != name {
				continue
			}
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["verb"] == "POST" && labels["host"] == "10.0.0.1:6443" && m.GetHistogram().GetSampleCount() == 1 {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("%s: no series {verb=POST, host=10.0.0.1:6443} with one observation", name)
		}
	}
}
