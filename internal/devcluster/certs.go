package devcluster

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ringfire/ringfire/internal/certs"
)

// certLifetime outlives any test run or `ringfire dev` session by far.
const certLifetime = 365 * 24 * time.Hour

// serving issues a TLS server certificate for the given host names and IPs.
func serving(ca *certs.Authority, commonName string, hosts ...string) (certs.Pair, error) {
	return ca.Issue(certs.Request{CommonName: commonName, Hosts: hosts, Validity: certLifetime,
		Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
}

// client issues a client certificate; the API server maps CN to the user
// name and O to its groups.
func client(ca *certs.Authority, user string, groups ...string) (certs.Pair, error) {
	return ca.Issue(certs.Request{CommonName: user, Organizations: groups, Validity: certLifetime,
		Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

// serviceAccountKeys makes the RSA key pair the API server verifies and the
// controller manager signs service-account tokens with.
func serviceAccountKeys() (privPEM, pubPEM []byte, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, fmt.Errorf("generate service-account key: %w", err)
	}
	privPEM, err = certs.PrivateKeyPEM(key)
	if err != nil {
		return nil, nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, fmt.Errorf("encode service-account public key: %w", err)
	}
	return privPEM, certs.PEM("PUBLIC KEY", pubDER), nil
}

// writeKeyPair writes <dir>/<name>.crt and <dir>/<name>.key and returns their paths.
func writeKeyPair(dir, name string, kp certs.Pair) (certPath, keyPath string, err error) {
	certPath = filepath.Join(dir, name+".crt")
	keyPath = filepath.Join(dir, name+".key")
	if err := os.WriteFile(certPath, kp.Cert, 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyPath, kp.Key, 0o600); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}
