// Package certs makes the TLS material of the ring's etcd (deploy/etcd): a CA, one
// certificate the members serve and talk to each other with, and a client certificate for
// ringfire. `ringfire certs` prints it as the two Secrets the manifests mount.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Options names what the certificates are for.
type Options struct {
	Namespace string        // of the etcd Service; default ringfire-system
	Service   string        // the etcd headless Service; default ringfire-etcd
	Validity  time.Duration // of every certificate; default a year
	// ExtraHosts are more names or IPs the members serve under (e.g. 127.0.0.1 for a test).
	ExtraHosts []string
}

// Pair is a PEM certificate and its PEM private key.
type Pair struct{ Cert, Key []byte }

// Set is what the ring's etcd and ringfire need: the CA certificate, the members' pair
// (serving and peer), and ringfire's client pair.
type Set struct {
	CA     []byte
	Server Pair
	Client Pair
}

// New makes a fresh CA and the server and client certificates it signs.
func New(o Options) (*Set, error) {
	if o.Namespace == "" {
		o.Namespace = "ringfire-system"
	}
	if o.Service == "" {
		o.Service = "ringfire-etcd"
	}
	if o.Validity == 0 {
		o.Validity = 365 * 24 * time.Hour
	}
	now := time.Now().Add(-5 * time.Minute) // a little clock skew between nodes
	caKey, caTmpl, err := template("ringfire etcd CA", now, o.Validity)
	if err != nil {
		return nil, err
	}
	caTmpl.IsCA, caTmpl.BasicConstraintsValid = true, true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}

	svc := o.Service + "." + o.Namespace + ".svc"
	hosts := []string{
		"*." + svc, "*." + svc + ".cluster.local", svc, svc + ".cluster.local", "localhost", "127.0.0.1", "::1",
	}
	hosts = append(hosts, o.ExtraHosts...)
	// Members present it as servers to clients and peers, and as clients to their peers.
	server, err := leaf(ca, caKey, o.Service, hosts, now, o.Validity, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, err
	}
	client, err := leaf(ca, caKey, "ringfire", nil, now, o.Validity, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, err
	}
	return &Set{CA: pemBlock("CERTIFICATE", caDER), Server: server, Client: client}, nil
}

func template(cn string, notBefore time.Time, validity time.Duration) (*ecdsa.PrivateKey, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	return key, &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"ringfire"}},
		NotBefore:    notBefore,
		NotAfter:     notBefore.Add(validity),
	}, nil
}

func leaf(ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, hosts []string, notBefore time.Time, validity time.Duration, usage ...x509.ExtKeyUsage) (Pair, error) {
	key, tmpl, err := template(cn, notBefore, validity)
	if err != nil {
		return Pair{}, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = usage
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return Pair{}, fmt.Errorf("certificate %s: %w", cn, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{Cert: pemBlock("CERTIFICATE", der), Key: pemBlock("PRIVATE KEY", keyDER)}, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// Files are the paths WriteFiles wrote.
type Files struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// WriteFiles writes the set as PEM files into dir (keys readable by the owner only).
func (s *Set) WriteFiles(dir string) (Files, error) {
	f := Files{
		CA:         filepath.Join(dir, "ca.crt"),
		ServerCert: filepath.Join(dir, "server.crt"), ServerKey: filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.crt"), ClientKey: filepath.Join(dir, "client.key"),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return f, err
	}
	for path, data := range map[string][]byte{
		f.CA: s.CA, f.ServerCert: s.Server.Cert, f.ServerKey: s.Server.Key, f.ClientCert: s.Client.Cert, f.ClientKey: s.Client.Key,
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return f, err
		}
	}
	return f, nil
}
