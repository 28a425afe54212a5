// Package certs makes the TLS material of the ring's etcd (deploy/etcd): a CA, one
// certificate the members serve and talk to each other with, and a client certificate for
// ringfire. `ringfire certs` prints it as the two Secrets the manifests mount and a third that
// keeps the CA, from which `ringfire certs --renew` issues new leaves.
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Options names what the certificates are for.
type Options struct {
	Namespace string        // of the etcd Service; default ringfire-system
	Service   string        // the etcd headless Service; default ringfire-etcd
	Validity  time.Duration // of the server and client certificates; default a year
	// CAValidity is the CA's, when New makes one; default ten years, so that leaves can be
	// renewed under it many times.
	CAValidity time.Duration
	// ExtraHosts are more names or IPs the members serve under (e.g. 127.0.0.1 for a test).
	ExtraHosts []string
}

// Pair is a PEM certificate and its PEM private key.
type Pair struct{ Cert, Key []byte }

// Set is what the ring's etcd and ringfire need: the CA certificate (and its key, which no
// pod mounts: it only signs renewed leaves), the members' pair (serving and peer), and
// ringfire's client pair.
type Set struct {
	CA     []byte
	CAKey  []byte
	Server Pair
	Client Pair
}

func (o *Options) defaults() {
	if o.Namespace == "" {
		o.Namespace = "ringfire-system"
	}
	if o.Service == "" {
		o.Service = "ringfire-etcd"
	}
	if o.Validity == 0 {
		o.Validity = 365 * 24 * time.Hour
	}
	if o.CAValidity == 0 {
		o.CAValidity = 10 * 365 * 24 * time.Hour
	}
}

// New makes a fresh CA and the server and client certificates it signs.
func New(o Options) (*Set, error) {
	o.defaults()
	ca, err := NewAuthority("ringfire etcd CA", o.CAValidity)
	if err != nil {
		return nil, err
	}
	return Renew(ca, o)
}

// Renew issues new server and client certificates signed by ca, the CA of an existing ring,
// which trusts them as it trusted the old ones. Leaves never outlive their CA: a Validity past
// the CA's end is cut to it.
func Renew(ca *Authority, o Options) (*Set, error) {
	o.defaults()
	if left := time.Until(ca.cert.NotAfter); left < o.Validity {
		o.Validity = left
	}
	if o.Validity <= 0 {
		return nil, fmt.Errorf("the CA expired at %s: make a new one (ringfire certs without --renew) and roll every member and replica", ca.cert.NotAfter.UTC().Format(time.RFC3339))
	}
	svc := o.Service + "." + o.Namespace + ".svc"
	hosts := []string{
		"*." + svc, "*." + svc + ".cluster.local", svc, svc + ".cluster.local", "localhost", "127.0.0.1", "::1",
	}
	hosts = append(hosts, o.ExtraHosts...)
	// Members present it as servers to clients and peers, and as clients to their peers.
	server, err := ca.Issue(Request{CommonName: o.Service, Hosts: hosts, Validity: o.Validity,
		Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return nil, err
	}
	client, err := ca.Issue(Request{CommonName: "ringfire", Validity: o.Validity, Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return nil, err
	}
	return &Set{CA: ca.CertPEM, CAKey: ca.KeyPEM, Server: server, Client: client}, nil
}

// skew backdates every certificate, for clocks a little apart.
const skew = time.Hour

// Authority is a certificate authority held in memory: ringfire's etcd CA, and the
// throw-away CA of a local control plane (e2e/cluster).
type Authority struct {
	CertPEM []byte
	KeyPEM  []byte
	cert    *x509.Certificate
	key     crypto.Signer
}

// NewAuthority makes a self-signed CA named cn, valid for validity.
func NewAuthority(cn string, validity time.Duration) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-skew),
		NotAfter:              time.Now().Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-sign CA %s: %w", cn, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := PrivateKeyPEM(key)
	if err != nil {
		return nil, err
	}
	return &Authority{CertPEM: PEM("CERTIFICATE", der), KeyPEM: keyPEM, cert: cert, key: key}, nil
}

// LoadAuthority is the CA whose PEM certificate and private key are given, to issue more
// certificates under it.
func LoadAuthority(certPEM, keyPEM []byte) (*Authority, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("CA certificate: no PEM CERTIFICATE block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("certificate %q is not a CA", cert.Subject.CommonName)
	}
	block, _ = pem.Decode(keyPEM)
	if block == nil {
		return nil, fmt.Errorf("CA key: no PEM block")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		if ec, ecErr := x509.ParseECPrivateKey(block.Bytes); ecErr == nil {
			parsed = ec
		} else {
			return nil, fmt.Errorf("CA key: %w", err)
		}
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("CA key: %T cannot sign", parsed)
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("the CA key does not belong to the CA certificate %q", cert.Subject.CommonName)
	}
	return &Authority{CertPEM: certPEM, KeyPEM: keyPEM, cert: cert, key: key}, nil
}

// Request is what a certificate is for.
type Request struct {
	CommonName    string
	Organizations []string // the API server takes them as the user's groups
	Hosts         []string // DNS names and IPs it serves under
	Validity      time.Duration
	Usage         []x509.ExtKeyUsage
}

// Issue makes a key and a certificate for r, signed by the authority.
func (a *Authority) Issue(r Request) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, fmt.Errorf("generate key for %s: %w", r.CommonName, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: r.CommonName, Organization: r.Organizations},
		NotBefore:    time.Now().Add(-skew),
		NotAfter:     time.Now().Add(r.Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  r.Usage,
	}
	for _, h := range r.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return Pair{}, fmt.Errorf("sign certificate for %s: %w", r.CommonName, err)
	}
	keyPEM, err := PrivateKeyPEM(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{Cert: PEM("CERTIFICATE", der), Key: keyPEM}, nil
}

// PrivateKeyPEM is key in PKCS #8, PEM-encoded.
func PrivateKeyPEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode private key: %w", err)
	}
	return PEM("PRIVATE KEY", der), nil
}

// PEM is der as one PEM block of kind.
func PEM(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		// crypto/rand does not fail on Linux; a fixed serial would still be valid.
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
