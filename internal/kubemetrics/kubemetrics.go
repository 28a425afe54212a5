// Package kubemetrics exposes client-go's request metrics under the names
// Kubernetes components give them (k8s.io/component-base's restclient
// metrics), so that dashboards built for any controller read a replica's API
// traffic as they are: requests by code, method and host; their latency by
// verb and host; and the time they waited on the client rate limiter
// (--kube-api-qps, --kube-api-burst), which shows whether it holds a replica
// back.
package kubemetrics

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/metrics"

	"github.com/ringfire/ringfire/internal/promreg"
)

// The names and labels are component-base's, and so are the buckets.
const (
	RequestsTotal       = "rest_client_requests_total"
	RequestDuration     = "rest_client_request_duration_seconds"
	RateLimiterDuration = "rest_client_rate_limiter_duration_seconds"
)

var buckets = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60}

type latency struct{ h *prometheus.HistogramVec }

func (l latency) Observe(_ context.Context, verb string, u url.URL, d time.Duration) {
	l.h.WithLabelValues(verb, u.Host).Observe(d.Seconds())
}

type result struct{ c *prometheus.CounterVec }

func (r result) Increment(_ context.Context, code, method, host string) {
	r.c.WithLabelValues(code, method, host).Inc()
}

// Register hooks client-go's metrics to reg. client-go takes hooks once per
// process: a second call hooks nothing more.
func Register(reg prometheus.Registerer) error {
	req := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: RequestDuration, Help: "Request latency in seconds, by verb and host.", Buckets: buckets,
	}, []string{"verb", "host"})
	wait := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: RateLimiterDuration, Help: "Time requests waited on the client rate limiter (--kube-api-qps, --kube-api-burst), by verb and host.", Buckets: buckets,
	}, []string{"verb", "host"})
	results := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: RequestsTotal, Help: "HTTP requests by status code, method and host.",
	}, []string{"code", "method", "host"})
	metrics.Register(metrics.RegisterOpts{
		RequestLatency: latency{req}, RateLimiterLatency: latency{wait}, RequestResult: result{results},
	})
	if err := promreg.Register(reg, req, wait, results); err != nil {
		return fmt.Errorf("client-go metrics: %w", err)
	}
	return nil
}
