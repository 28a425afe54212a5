package opsserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	certutil "k8s.io/client-go/util/cert"
)

// Files of a certificate directory (--metrics-cert-dir), as a
// kubernetes.io/tls Secret mounts them.
const (
	certFile = "tls.crt"
	keyFile  = "tls.key"
)

// servingCert is the metrics server's certificate: the key pair of a
// directory, reloaded when its files change, or a self-signed one made at
// start when no directory is given (as Kubernetes components do).
type servingCert struct {
	content func() (cert, key []byte) // the current PEM pair

	mu              sync.Mutex
	certPEM, keyPEM []byte
	cert            *tls.Certificate
}

// newServingCert loads the key pair of dir, or makes a self-signed one when
// dir is empty. A directory's files are watched until ctx is done.
func newServingCert(ctx context.Context, dir string) (*servingCert, bool, error) {
	if dir == "" {
		certPEM, keyPEM, err := selfSigned()
		if err != nil {
			return nil, false, err
		}
		return &servingCert{content: func() ([]byte, []byte) { return certPEM, keyPEM }}, true, nil
	}
	files, err := dynamiccertificates.NewDynamicServingContentFromFiles("ringfire-metrics",
		filepath.Join(dir, certFile), filepath.Join(dir, keyFile))
	if err != nil {
		return nil, false, fmt.Errorf("metrics certificate in %s: %w", dir, err)
	}
	go files.Run(ctx, 1)
	return &servingCert{content: files.CurrentCertKeyContent}, false, nil
}

// selfSigned makes a certificate for this host's name, localhost and the
// loopback addresses.
func selfSigned() ([]byte, []byte, error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "ringfire"
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host,
		[]net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback}, []string{"localhost"})
	if err != nil {
		return nil, nil, fmt.Errorf("self-signed metrics certificate: %w", err)
	}
	return certPEM, keyPEM, nil
}

// get is tls.Config's GetCertificate: the current pair, parsed again only
// when it changed.
func (s *servingCert) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	certPEM, keyPEM := s.content()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cert != nil && bytes.Equal(certPEM, s.certPEM) && bytes.Equal(keyPEM, s.keyPEM) {
		return s.cert, nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("metrics certificate: %w", err)
	}
	s.certPEM, s.keyPEM, s.cert = certPEM, keyPEM, &cert
	return s.cert, nil
}

// tlsConfig serves the current certificate, TLS 1.2 at least.
func (s *servingCert) tlsConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.get}
}
