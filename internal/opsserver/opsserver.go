// Package opsserver serves what operators and Kubernetes ask of a replica,
// on separate addresses as Kubernetes controllers do: metrics (/metrics, and
// the status page at / with its data at /status.json), health probes
// (/healthz, /readyz) and, only when asked for, Go's profiles
// (/debug/pprof/). Probes stay answerable when the metrics port is
// firewalled or behind auth, and profiles are never exposed by default.
//
// With Config.Secure the metrics address serves HTTPS (servingcert.go) and
// lets in only callers the API server authenticates and authorizes
// (access.go). The status page gathers the registry at most once a second
// however often it is asked for (workcache.go).
package opsserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"

	"github.com/ringfire/ringfire/shard"
)

// Readiness says whether the replica is ready, and why not.
type Readiness func() error

// Config configures the servers. An empty address serves nothing there.
type Config struct {
	// MetricsAddr (--metrics-bind-address, e.g. ":8080") serves /metrics,
	// the status page at / and /status.json.
	MetricsAddr string
	// HealthAddr (--health-probe-bind-address, e.g. ":8081") serves /healthz
	// and /readyz.
	HealthAddr string
	// PprofAddr (--pprof-bind-address, e.g. "127.0.0.1:6060") serves Go's
	// profiles under /debug/pprof/.
	PprofAddr string
	Gatherer  prometheus.Gatherer
	Ready     Readiness
	Status    func() shard.Status
	Logger    hclog.Logger
	// Secure (--metrics-secure), when set, serves the metrics address over
	// HTTPS, to callers only that the API server authenticates and allows
	// to get the path. Nil serves plain HTTP to anyone who reaches it.
	Secure *Secure
}

// Secure is how the metrics address is guarded.
type Secure struct {
	// Kube reaches the API server that reviews the callers' tokens
	// (TokenReview) and their access (SubjectAccessReview).
	Kube *rest.Config
	// CertDir (--metrics-cert-dir) holds tls.crt and tls.key, reloaded
	// when they change; empty for a self-signed certificate made at start.
	CertDir string
}

// Listeners are the servers' listeners, opened by the caller; a nil one
// serves nothing.
type Listeners struct{ Metrics, Health, Pprof net.Listener }

// Serve opens the configured addresses and serves until ctx is done. It
// returns once every listener is closed, or at once if an address cannot be
// opened.
func Serve(ctx context.Context, cfg Config) error {
	var ls Listeners
	var errs []error
	open := func(addr, what string) net.Listener {
		if addr == "" || len(errs) > 0 {
			return nil
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("listen on %s for %s: %w", addr, what, err))
		}
		return ln
	}
	ls.Metrics = open(cfg.MetricsAddr, "metrics and the status page (--metrics-bind-address)")
	ls.Health = open(cfg.HealthAddr, "health probes (--health-probe-bind-address)")
	ls.Pprof = open(cfg.PprofAddr, "profiles (--pprof-bind-address)")
	if len(errs) > 0 {
		for _, ln := range []net.Listener{ls.Metrics, ls.Health, ls.Pprof} {
			if ln != nil {
				ln.Close()
			}
		}
		return errors.Join(errs...)
	}
	return ServeListeners(ctx, ls, cfg)
}

// ServeListeners is Serve on listeners the caller opened; the addresses of
// cfg are not used. With cfg.Secure, a certificate or API server client that
// cannot be made is an error before anything is served.
func ServeListeners(ctx context.Context, ls Listeners, cfg Config) error {
	metrics, metricsTLS, what, err := metricsHandler(cfg)
	if err != nil {
		for _, ln := range []net.Listener{ls.Metrics, ls.Health, ls.Pprof} {
			if ln != nil {
				ln.Close()
			}
		}
		return err
	}
	servers := []struct {
		ln      net.Listener
		handler http.Handler
		tls     *tls.Config
		what    string
	}{
		{ls.Metrics, metrics, metricsTLS, what},
		{ls.Health, healthMux(cfg), nil, "serving health probes"},
		{ls.Pprof, pprofMux(), nil, "serving Go's profiles"},
	}
	var wg sync.WaitGroup
	errs := make([]error, len(servers))
	for i, s := range servers {
		if s.ln == nil {
			continue
		}
		if cfg.Logger != nil {
			cfg.Logger.Info(s.what, "addr", s.ln.Addr().String())
		}
		wg.Go(func() { errs[i] = serve(ctx, s.ln, s.handler, s.tls) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// metricsHandler is the metrics address's handler and, with cfg.Secure, its
// TLS config, and what the log says it serves.
func metricsHandler(cfg Config) (http.Handler, *tls.Config, string, error) {
	mux := metricsMux(cfg)
	if cfg.Secure == nil {
		return mux, nil, "serving metrics and the status page over plain HTTP, to anyone (no --metrics-secure)", nil
	}
	if cfg.Secure.Kube == nil {
		return nil, nil, "", errors.New("--metrics-secure: no API server to review tokens with (give --kubeconfig, run in a cluster, or --metrics-secure=false)")
	}
	guard, err := newAccessGuard(cfg.Secure.Kube, cfg.Logger)
	if err != nil {
		return nil, nil, "", err
	}
	cert, selfSigned, err := newServingCert(cfg.Secure.CertDir, cfg.Logger)
	if err != nil {
		return nil, nil, "", err
	}
	what := "serving metrics and the status page over HTTPS (certificate of " + cfg.Secure.CertDir + ") to authorized callers"
	if selfSigned {
		what = "serving metrics and the status page over HTTPS (a self-signed certificate) to authorized callers"
	}
	return guard.wrap(mux), cert.tlsConfig(), what, nil
}

// serve serves handler on ln until ctx is done, or the server fails; over
// TLS when tlsConfig is set.
func serve(ctx context.Context, ln net.Listener, handler http.Handler, tlsConfig *tls.Config) error {
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, TLSConfig: tlsConfig}
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		sctx, done := context.WithTimeout(context.Background(), 2*time.Second)
		defer done()
		srv.Shutdown(sctx)
	}()
	var err error
	if tlsConfig != nil {
		err = srv.ServeTLS(ln, "", "") // the certificate comes from tlsConfig
	} else {
		err = srv.Serve(ln)
	}
	cancel()
	<-stopped
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve on %s: %w", ln.Addr(), err)
	}
	return nil
}

func metricsMux(cfg Config) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
	page := newStatusPage(cfg)
	mux.HandleFunc("GET /status.json", page.serveJSON)
	mux.HandleFunc("GET /{$}", page.serveHTML)
	return mux
}

func healthMux(cfg Config) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := cfg.Ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

func pprofMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}
