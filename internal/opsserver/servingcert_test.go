package opsserver

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writePair writes a fresh self-signed pair into dir, each file replaced
// whole (written aside, then renamed), and returns the certificate's DER.
func writePair(t *testing.T, dir string) []byte {
	t.Helper()
	certPEM, keyPEM, err := selfSigned()
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{keyFile: keyPEM, certFile: certPEM} {
		tmp := filepath.Join(dir, "."+name+".new")
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	block, _ := pem.Decode(certPEM)
	return block.Bytes
}

// The certificate of --metrics-cert-dir is served, and a new one in its
// place is served from then on, without a restart.
func TestServingCertReloadsItsDirectory(t *testing.T) {
	dir := t.TempDir()
	first := writePair(t, dir)
	cert, selfSigned, err := newServingCert(dir, nil)
	if err != nil || selfSigned {
		t.Fatalf("newServingCert(%s): self-signed %v, %v", dir, selfSigned, err)
	}
	if got, err := cert.get(nil); err != nil || !bytes.Equal(got.Certificate[0], first) {
		t.Fatalf("serves another certificate than the directory's (%v)", err)
	}
	second := writePair(t, dir)
	deadline := time.Now().Add(time.Minute) // read again a second after the last read
	for {
		got, err := cert.get(nil)
		if err == nil && bytes.Equal(got.Certificate[0], second) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still serving the replaced certificate a minute later (%v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Without a directory, a self-signed certificate for the loopback and
// localhost is made at start.
func TestServingCertSelfSigned(t *testing.T) {
	cert, selfSigned, err := newServingCert("", nil)
	if err != nil || !selfSigned {
		t.Fatalf("newServingCert without a directory: self-signed %v, %v", selfSigned, err)
	}
	got, err := cert.get(nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(got.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"localhost", "127.0.0.1"} {
		if err := leaf.VerifyHostname(host); err != nil {
			t.Errorf("self-signed certificate not for %s: %v", host, err)
		}
	}
	if _, _, err := newServingCert(t.TempDir(), nil); err == nil {
		t.Error("an empty --metrics-cert-dir was accepted")
	}
}

// A pair that does not load (a renewal caught half-written, a Secret gone
// wrong) leaves the last good pair served, and the pair is taken up once it
// loads again.
func TestServingCertKeepsTheLastGoodPair(t *testing.T) {
	dir := t.TempDir()
	first := writePair(t, dir)
	cert, _, err := newServingCert(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, certFile), []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	cert.checked = time.Time{} // due for a read at the next handshake
	if got, err := cert.get(nil); err != nil || !bytes.Equal(got.Certificate[0], first) {
		t.Fatalf("with a broken pair in the directory: %v; want the last good certificate served", err)
	}
	if cert.failing == "" {
		t.Error("the broken pair was not noted")
	}
	second := writePair(t, dir)
	cert.checked = time.Time{}
	if got, err := cert.get(nil); err != nil || !bytes.Equal(got.Certificate[0], second) || cert.failing != "" {
		t.Fatalf("once the pair loads again: %v, failing %q; want the new certificate served", err, cert.failing)
	}
}
