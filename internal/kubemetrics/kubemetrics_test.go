package kubemetrics

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/metrics"
)

func TestClientGoMetricsReachPrometheus(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	metrics.RequestLatency.Observe(ctx, "POST", url.URL{}, 20*time.Millisecond)
	metrics.RateLimiterLatency.Observe(ctx, "POST", url.URL{}, 5*time.Millisecond)
	metrics.RequestResult.Increment(ctx, "201", "POST", "127.0.0.1")
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, f := range families {
		got[f.GetName()] = len(f.GetMetric())
	}
	for _, name := range []string{"ringfire_kube_request_duration_seconds", "ringfire_kube_rate_limiter_wait_seconds", "ringfire_kube_requests_total"} {
		if got[name] != 1 {
			t.Errorf("%s: %d series, want 1", name, got[name])
		}
	}
}
