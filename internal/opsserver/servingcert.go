package opsserver

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	certutil "k8s.io/client-go/util/cert"
)

// Files of a certificate directory (--metrics-cert-dir), as a
// kubernetes.io/tls Secret mounts them.
const (
	certFile = "tls.crt"
	keyFile  = "tls.key"
)

// certRecheck is how often, at most, a handshake reads the certificate
// directory again: a renewed Secret is served within a second of kubelet
// writing it, and a scraper every few seconds reads two small files as
// often, no more.
const certRecheck = time.Second

// servingCert is the metrics server's certificate: the key pair of a
// directory, read again when a handshake finds it has not been for
// certRecheck, or a self-signed one made at start when no directory is given
// (as Kubernetes components do). A pair that does not parse (a renewal caught
// half-written) leaves the last good one served.
type servingCert struct {
	dir string // "" for the self-signed pair
	log hclog.Logger

	mu              sync.Mutex
	certPEM, keyPEM []byte
	cert            *tls.Certificate
	checked         time.Time // when dir was last read
	failing         string    // why the last read of dir was not served; "" when it was
}

// newServingCert loads the key pair of dir, or makes a self-signed one when
// dir is empty. It reports whether the pair is self-signed.
func newServingCert(dir string, log hclog.Logger) (*servingCert, bool, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	s := &servingCert{dir: dir, log: log.Named("metrics-cert")}
	if dir == "" {
		certPEM, keyPEM, err := selfSigned()
		if err != nil {
			return nil, false, err
		}
		if err := s.use(certPEM, keyPEM); err != nil {
			return nil, false, err
		}
		return s, true, nil
	}
	certPEM, keyPEM, err := s.read()
	if err == nil {
		err = s.use(certPEM, keyPEM)
	}
	if err != nil {
		return nil, false, fmt.Errorf("metrics certificate in %s: %w", dir, err)
	}
	s.checked = time.Now()
	return s, false, nil
}

// read reads the pair of the directory.
func (s *servingCert) read() (certPEM, keyPEM []byte, err error) {
	if certPEM, err = os.ReadFile(filepath.Join(s.dir, certFile)); err != nil {
		return nil, nil, err
	}
	if keyPEM, err = os.ReadFile(filepath.Join(s.dir, keyFile)); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

// use parses the pair and serves it from now on, unless it is the one
// served already; s.mu is held, or s is not shared yet.
func (s *servingCert) use(certPEM, keyPEM []byte) error {
	if s.cert != nil && bytes.Equal(certPEM, s.certPEM) && bytes.Equal(keyPEM, s.keyPEM) {
		return nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	s.certPEM, s.keyPEM, s.cert = certPEM, keyPEM, &cert
	return nil
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

// get is tls.Config's GetCertificate: the current pair, the directory read
// again first when certRecheck has passed since it last was. A directory
// that cannot be read or holds a pair that does not parse leaves the last
// good pair served, and is logged once for each new reason.
func (s *servingCert) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir != "" && time.Since(s.checked) >= certRecheck {
		s.checked = time.Now()
		certPEM, keyPEM, err := s.read()
		if err == nil {
			err = s.use(certPEM, keyPEM)
		}
		switch {
		case err != nil && err.Error() != s.failing:
			s.failing = err.Error()
			s.log.Warn("cannot load the metrics certificate; serving the last one loaded (check the Secret mounted there)", "dir", s.dir, "error", err)
		case err == nil && s.failing != "":
			s.failing = ""
			s.log.Info("metrics certificate loaded again", "dir", s.dir)
		}
	}
	return s.cert, nil
}

// tlsConfig serves the current certificate, TLS 1.2 at least.
func (s *servingCert) tlsConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.get}
}
