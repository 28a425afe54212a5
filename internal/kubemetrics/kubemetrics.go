// Package kubemetrics exposes client-go's request metrics (latency, results,
// time waiting on the client rate limiter) as Prometheus metrics, so that an
// operator can see whether --kube-api-qps holds a replica back.
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

type latency struct{ h *prometheus.HistogramVec }

func (l latency) Observe(_ context.Context, verb string, _ url.URL, d time.Duration) {
	l.h.WithLabelValues(verb).Observe(d.Seconds())
}

type result struct{ c *prometheus.CounterVec }

func (r result) Increment(_ context.Context, code, method, _ string) {
	r.c.WithLabelValues(code, method).Inc()
}

// Register hooks client-go's metrics to reg. client-go takes hooks once per
// process: a second call hooks nothing more.
func Register(reg prometheus.Registerer) error {
	buckets := prometheus.ExponentialBuckets(0.001, 2, 16)
	req := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "ringfire_kube_request_duration_seconds", Help: "API server request latency seen by client-go, by verb.", Buckets: buckets,
	}, []string{"verb"})
	wait := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "ringfire_kube_rate_limiter_wait_seconds", Help: "Time requests waited on the client rate limiter (--kube-api-qps/--kube-api-burst), by verb.", Buckets: buckets,
	}, []string{"verb"})
	results := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ringfire_kube_requests_total", Help: "API server requests by HTTP code and method.",
	}, []string{"code", "method"})
	metrics.Register(metrics.RegisterOpts{
		RequestLatency: latency{req}, RateLimiterLatency: latency{wait}, RequestResult: result{results},
	})
	if err := promreg.Register(reg, req, wait, results); err != nil {
		return fmt.Errorf("client-go metrics: %w", err)
	}
	return nil
}
