package opsserver

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringfire/ringfire/deploy"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/shard"
)

// With Secure, the metrics address serves HTTPS and asks a real API server,
// as ringfire's ServiceAccount with the ClusterRole of deploy/ringfire, who
// each caller is and whether it may get the path: no token or a token the
// API server does not know is 401, a ServiceAccount without
// ringfire-metrics-reader 403, one with it 200. The probes stay open.
func TestSecureMetricsAskTheAPIServer(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{Nodes: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := deploy.InstallRBAC(ctx, c.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	replicaCfg, err := deploy.ServiceAccountConfig(ctx, c.RESTConfig(), 3600)
	if err != nil {
		t.Fatal(err)
	}
	reader := procs.MetricsToken(t, c.RESTConfig(), deploy.Namespace, "scraper", true)
	stranger := procs.MetricsToken(t, c.RESTConfig(), deploy.Namespace, "stranger", false)

	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "ringfire_test_gauge", Help: "a gauge"}))
	ls := Listeners{Metrics: listen(t), Health: listen(t)}
	srvCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ServeListeners(srvCtx, ls, Config{Gatherer: reg, Ready: func() error { return nil },
			Status: func() shard.Status { return shard.Status{ID: "r0", Slots: 8} },
			Secure: &Secure{Kube: replicaCfg}})
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	client := &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // self-signed
	base := "https://" + ls.Metrics.Addr().String()
	fetch := func(url, token string) (int, string, time.Duration) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), time.Since(start)
	}

	for _, tc := range []struct {
		name, path, token string
		code              int
		contains          string
	}{
		{"no token", "/metrics", "", 401, "Unauthorized"},
		{"a token the API server does not know", "/metrics", "not-a-token", 401, "Unauthorized"},
		{"a ServiceAccount without the role", "/metrics", stranger, 403, "ringfire-metrics-reader"},
		{"a ServiceAccount without the role, the page", "/", stranger, 403, "Forbidden"},
		{"the reader", "/metrics", reader, 200, "ringfire_test_gauge"},
		{"the reader, the status page", "/", reader, 200, "<svg"},
		{"the reader, the status data", "/status.json", reader, 200, `"Slots":8`},
	} {
		code, body, took := fetch(base+tc.path, tc.token)
		if code != tc.code || !strings.Contains(body, tc.contains) {
			t.Errorf("%s, GET %s: HTTP %d %.200q; want %d with %q", tc.name, tc.path, code, body, tc.code, tc.contains)
		}
		t.Logf("%s, GET %s: HTTP %d in %v", tc.name, tc.path, code, took.Round(time.Microsecond))
	}
	if code, _, _ := fetch("http://"+ls.Metrics.Addr().String()+"/metrics", reader); code != http.StatusBadRequest {
		t.Errorf("plain HTTP to the secure port: HTTP %d, want 400", code)
	}
	if code, body := get(t, ls.Health, "/readyz"); code != 200 {
		t.Errorf("/readyz without a token: HTTP %d %q, want 200: probes need no token", code, body)
	}

	// The cost of the check once the API server's answers are cached (they
	// are for 10 s): reader scrapes of /metrics, against the same handler
	// unguarded.
	const scrapes = 200
	var guarded time.Duration
	for range scrapes {
		_, _, took := fetch(base+"/metrics", reader)
		guarded += took
	}
	plain := listen(t)
	go func() { _ = serve(srvCtx, plain, metricsMux(Config{Gatherer: reg}), nil) }()
	var open time.Duration
	for range scrapes {
		_, _, took := fetch("http://"+plain.Addr().String()+"/metrics", "")
		open += took
	}
	t.Logf("mean scrape: %v over HTTPS with a cached token and access review, %v over plain HTTP unguarded",
		(guarded / scrapes).Round(time.Microsecond), (open / scrapes).Round(time.Microsecond))
}
