// Package opsserver serves what operators and Kubernetes ask of a replica:
// /healthz, /readyz, /metrics, and a status page at / that draws the ring.
package opsserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ringfire/ringfire/shard"
)

// Readiness says whether the replica is ready, and why not.
type Readiness func() error

// Config configures the server.
type Config struct {
	Addr     string // e.g. ":8080"
	Gatherer prometheus.Gatherer
	Ready    Readiness
	Status   func() shard.Status
	Logger   hclog.Logger
	// Pprof serves Go's profiles under /debug/pprof/.
	Pprof bool
}

// Serve serves until ctx is done. It returns once the listener is closed.
func Serve(ctx context.Context, cfg Config) error {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s for metrics and health: %w", cfg.Addr, err)
	}
	return ServeListener(ctx, ln, cfg)
}

// ServeListener is Serve on a listener the caller opened.
func ServeListener(ctx context.Context, ln net.Listener, cfg Config) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := cfg.Ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
	page := newStatusPage(cfg)
	mux.HandleFunc("GET /status.json", page.serveJSON)
	mux.HandleFunc("GET /{$}", page.serveHTML)
	if cfg.Pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if cfg.Logger != nil {
		cfg.Logger.Info("serving health, readiness, metrics and status", "addr", ln.Addr().String())
	}
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
