package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
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
	fs.StringVar(&f.prefix, "etcd-prefix", "/ringfire", "key prefix of the ring in etcd; rings under different prefixes share one etcd")
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

func (f *etcdFlags) client(endpoints []string) (*clientv3.Client, error) {
	cfg := clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          3 * time.Second,
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		Logger:               zap.NewNop(),
	}
	if f.caFile != "" || f.certFile != "" || f.keyFile != "" {
		if (f.certFile == "") != (f.keyFile == "") {
			return nil, fmt.Errorf("--etcd-cert and --etcd-key go together")
		}
		tlsInfo := transport.TLSInfo{CertFile: f.certFile, KeyFile: f.keyFile, TrustedCAFile: f.caFile}
		tlsCfg, err := tlsInfo.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("etcd TLS: %w", err)
		}
		cfg.TLS = tlsCfg
	}
	c, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", endpoints, err)
	}
	return c, nil
}
