package opsserver

import (
	"bytes"
	"context"
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cert, selfSigned, err := newServingCert(ctx, dir)
	if err != nil || selfSigned {
		t.Fatalf("newServingCert(%s): self-signed %v, %v", dir, selfSigned, err)
	}
	if got, err := cert.get(nil); err != nil || !bytes.Equal(got.Certificate[0], first) {
		t.Fatalf("serves another certificate than the directory's (%v)", err)
	}
	second := writePair(t, dir)
	deadline := time.Now().Add(time.Minute) // the files are watched; a resync every minute covers a missed event
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
	cert, selfSigned, err := newServingCert(context.Background(), "")
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
	if _, _, err := newServingCert(context.Background(), t.TempDir()); err == nil {
		t.Error("an empty --metrics-cert-dir was accepted")
	}
}
