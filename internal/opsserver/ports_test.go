package opsserver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringfire/ringfire/shard"
)

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func get(t *testing.T, ln net.Listener, path string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + ln.Addr().String() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Each address serves its own paths and nothing else: metrics and the
// status page on one, the probes on another, profiles on a third.
func TestServersSplitByPurpose(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "ringfire_test_gauge", Help: "a gauge"}))
	ready := errors.New("joining the ring")
	cfg := Config{
		Gatherer: reg,
		Ready:    func() error { return ready },
		Status:   func() shard.Status { return shard.Status{ID: "r0", Slots: 8} },
	}
	ls := Listeners{Metrics: listen(t), Health: listen(t), Pprof: listen(t)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeListeners(ctx, ls, cfg) }()

	for _, tc := range []struct {
		ln       net.Listener
		path     string
		code     int
		contains string
	}{
		{ls.Metrics, "/metrics", 200, "ringfire_test_gauge 0"},
		{ls.Metrics, "/status.json", 200, `"ID":"r0"`},
		{ls.Metrics, "/", 200, "<html"},
		{ls.Metrics, "/readyz", 404, ""},
		{ls.Metrics, "/debug/pprof/", 404, ""},
		{ls.Health, "/healthz", 200, "ok"},
		{ls.Health, "/readyz", 503, "not ready: joining the ring"},
		{ls.Health, "/metrics", 404, ""},
		{ls.Health, "/", 404, ""},
		{ls.Pprof, "/debug/pprof/", 200, "goroutine"},
		{ls.Pprof, "/metrics", 404, ""},
	} {
		code, body := get(t, tc.ln, tc.path)
		if code != tc.code || !strings.Contains(body, tc.contains) {
			t.Errorf("GET %s on %s: %d %q, want %d with %q", tc.path, tc.ln.Addr(), code, body, tc.code, tc.contains)
		}
	}
	ready = nil
	if code, _ := get(t, ls.Health, "/readyz"); code != 200 {
		t.Errorf("/readyz once ready: %d, want 200", code)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeListeners: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeListeners did not return after its context ended")
	}
	if _, err := net.Dial("tcp", ls.Health.Addr().String()); err == nil {
		t.Error("the health listener is still open")
	}
}

// Serve opens no more than the addresses given, and an address it cannot
// open fails it at once, naming the flag, with nothing left open.
func TestServeOpensTheConfiguredAddresses(t *testing.T) {
	busy := listen(t)
	defer busy.Close()
	free := listen(t)
	freeAddr := free.Addr().String()
	free.Close()
	err := Serve(context.Background(), Config{MetricsAddr: freeAddr, HealthAddr: busy.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), "--health-probe-bind-address") {
		t.Fatalf("Serve on a busy health address: %v, want an error naming --health-probe-bind-address", err)
	}
	ln, err := net.Listen("tcp", freeAddr)
	if err != nil {
		t.Fatalf("the metrics address was left open: %v", err)
	}
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Config{MetricsAddr: freeAddr, Gatherer: prometheus.NewRegistry(),
			Status: func() shard.Status { return shard.Status{} }})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", freeAddr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on the metrics address: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}
