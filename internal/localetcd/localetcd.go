// Package localetcd runs a single-member etcd inside the process: the ring's
// store for `ringfire run` when no --etcd-endpoints are given, and the real
// etcd of the tests.
package localetcd

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ringfire/ringfire/internal/freeport"
	"go.etcd.io/etcd/server/v3/embed"
)

// Options configures a local etcd.
type Options struct {
	// Dir holds the data; it survives Stop so the server can be restarted.
	Dir string
	// ClientPort and PeerPort on 127.0.0.1; 0 picks free ports once, at Start,
	// and keeps them across restarts.
	ClientPort, PeerPort int
	// LogLevel of etcd's own logs (default "error"), sent to Logger (default:
	// none).
	LogLevel string
	Logger   hclog.Logger
}

// Server is a running (or stopped) local etcd.
type Server struct {
	opts Options
	etcd *embed.Etcd
}

// Start starts a local etcd and waits until it serves.
func Start(opts Options) (*Server, error) {
	if opts.Dir == "" {
		return nil, errors.New("local etcd needs a data directory")
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "error"
	}
	// A port picked here may still be taken by another process before etcd
	// binds it; then pick again, a bounded number of times. Ports the
	// caller gave are used as given.
	pickClient, pickPeer := opts.ClientPort == 0, opts.PeerPort == 0
	var err error
	for range 5 {
		if pickClient {
			if opts.ClientPort, err = freeport.Pick(); err != nil {
				return nil, err
			}
		}
		if pickPeer {
			if opts.PeerPort, err = freeport.Pick(); err != nil {
				return nil, err
			}
		}
		s := &Server{opts: opts}
		if err = s.start(); err == nil || !freeport.InUse(err) || !(pickClient || pickPeer) {
			return s, err
		}
	}
	return nil, err
}

// Endpoint is the client URL.
func (s *Server) Endpoint() string { return fmt.Sprintf("http://127.0.0.1:%d", s.opts.ClientPort) }

func (s *Server) start() error {
	if err := os.MkdirAll(s.opts.Dir, 0o700); err != nil {
		return fmt.Errorf("local etcd data dir: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = "ringfire"
	cfg.Dir = filepath.Join(s.opts.Dir, "etcd")
	cfg.LogLevel = s.opts.LogLevel
	log := s.opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(newZapLogger(log, s.opts.LogLevel))
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", s.opts.ClientPort)}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", s.opts.PeerPort)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	cfg.ListenMetricsUrls = nil
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start local etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("local etcd failed while starting: %w", err)
	case <-time.After(60 * time.Second):
		e.Close()
		return errors.New("local etcd not ready after 60s")
	}
	s.etcd = e
	return nil
}

// Stop stops the server, keeping its data. Idempotent.
func (s *Server) Stop() {
	if s.etcd != nil {
		s.etcd.Close()
		s.etcd = nil
	}
}

// Restart stops the server and starts it again on the same ports and data.
func (s *Server) Restart() error {
	s.Stop()
	return s.start()
}

// Err reports a fatal error of the running server.
func (s *Server) Err() <-chan error {
	if s.etcd == nil {
		return nil
	}
	return s.etcd.Err()
}

// Wait blocks until ctx is done; then stops the server.
func (s *Server) Wait(ctx context.Context) {
	<-ctx.Done()
	s.Stop()
}
