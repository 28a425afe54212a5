package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ringfire/ringfire/internal/certs"
	"github.com/ringfire/ringfire/membership"
)

// etcdFlags are the flags that reach the ring's etcd.
type etcdFlags struct {
	endpoints string
	prefix    string
	caFile    string
	certFile  string
	keyFile   string
	dataDir   string
}

func (f *etcdFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.endpoints, "etcd-endpoints", "", "comma-separated etcd client URLs of the ring; empty: the embedded etcd in --data-dir")
	fs.StringVar(&f.prefix, "etcd-prefix", membership.DefaultConfig().Prefix, "key prefix of the ring in etcd; rings under different prefixes share one etcd")
	fs.StringVar(&f.caFile, "etcd-ca", "", "CA bundle to verify etcd's serving certificate")
	fs.StringVar(&f.certFile, "etcd-cert", "", "client certificate for etcd")
	fs.StringVar(&f.keyFile, "etcd-key", "", "client key for etcd")
	fs.StringVar(&f.dataDir, "data-dir", ".ringfire", "directory for the embedded etcd's data and endpoint file")
}

// endpointFile records the embedded etcd's URL so `ringfire ring status`
// finds it without flags.
func (f *etcdFlags) endpointFile() string { return filepath.Join(f.dataDir, "etcd-endpoint") }

func (f *etcdFlags) endpointList() ([]string, error) {
	if f.endpoints != "" {
		return strings.Split(f.endpoints, ","), nil
	}
	b, err := os.ReadFile(f.endpointFile())
	if err != nil {
		return nil, fmt.Errorf("no --etcd-endpoints given and no embedded etcd found in %s (is `ringfire run` running with --data-dir=%s?)", f.dataDir, f.dataDir)
	}
	return []string{strings.TrimSpace(string(b))}, nil
}

// certificateExpiry watches the files of --etcd-ca and --etcd-cert, and the certificate the
// etcd server presents in a handshake of its own, for the expiry metric.
func (f *etcdFlags) certificateExpiry(endpoints []string) *certs.Expiry {
	files := map[string]string{}
	if f.caFile != "" {
		files["etcd-ca"] = f.caFile
	}
	if f.certFile != "" {
		files["etcd-client"] = f.certFile
	}
	probes := map[string]certs.Probe{}
	if tlsCfg, err := f.tlsConfig(); err == nil && tlsCfg != nil {
		probes["etcd-server"] = func(ctx context.Context) ([]*x509.Certificate, error) {
			return serverCertificates(ctx, tlsCfg, endpoints)
		}
	}
	return certs.NewExpiry(files, probes)
}

// serverCertificates are the certificates the first etcd endpoint that answers presents.
func serverCertificates(ctx context.Context, tlsCfg *tls.Config, endpoints []string) ([]*x509.Certificate, error) {
	var errs []error
	for _, ep := range endpoints {
		u, err := url.Parse(ep)
		if err != nil || u.Scheme != "https" {
			continue
		}
		d := tls.Dialer{Config: tlsCfg.Clone()}
		conn, err := d.DialContext(ctx, "tcp", u.Host)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		defer conn.Close()
		return conn.(*tls.Conn).ConnectionState().PeerCertificates, nil
	}
	return nil, fmt.Errorf("no etcd endpoint answered a TLS handshake: %w", errors.Join(errs...))
}

// tlsConfig is the TLS configuration of the etcd client, nil without TLS. etcd's
// transport.TLSInfo reads --etcd-cert and --etcd-key again on every handshake, so a renewed
// pair is used by the next connection without a restart; the CA bundle is read once.
func (f *etcdFlags) tlsConfig() (*tls.Config, error) {
	if f.caFile == "" && f.certFile == "" && f.keyFile == "" {
		return nil, nil
	}
	if (f.certFile == "") != (f.keyFile == "") {
		return nil, fmt.Errorf("--etcd-cert and --etcd-key go together")
	}
	tlsInfo := transport.TLSInfo{CertFile: f.certFile, KeyFile: f.keyFile, TrustedCAFile: f.caFile}
	tlsCfg, err := tlsInfo.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd TLS: %w", err)
	}
	return tlsCfg, nil
}

func (f *etcdFlags) client(endpoints []string) (*clientv3.Client, error) {
	cfg := clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          3 * time.Second,
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		Logger:               zap.NewNop(),
	}
	tlsCfg, err := f.tlsConfig()
	if err != nil {
		return nil, err
	}
	cfg.TLS = tlsCfg
	c, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", endpoints, err)
	}
	return c, nil
}
