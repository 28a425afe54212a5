package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The metric reads each file's earliest NotAfter, sees a renewal written in place once a
// minute has passed since its last reading, and adds what a handshake saw.
func TestExpiryFollowsRenewals(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	ca, err := NewAuthority("test CA", 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	set, err := Renew(ca, Options{Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	files, err := set.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var presented []*x509.Certificate // what the server's handshake shows
	e := NewExpiry(map[string]string{"etcd-ca": files.CA, "etcd-client": files.ClientCert, "missing": filepath.Join(dir, "nope.crt")},
		map[string]Probe{"etcd-server": func(context.Context) ([]*x509.Certificate, error) { return presented, nil }})
	now := time.Now()
	e.now = func() time.Time { return now }
	first := e.Expiries()
	if d := time.Until(first["etcd-client"]); d < 59*time.Minute || d > time.Hour {
		t.Errorf("client certificate expires in %s, want an hour", d)
	}
	if d := time.Until(first["etcd-ca"]); d < 47*time.Hour {
		t.Errorf("CA expires in %s, want 48 h", d)
	}
	if _, ok := first["missing"]; ok {
		t.Error("a missing file has a series")
	}
	if _, ok := first["etcd-server"]; ok {
		t.Error("a server that presented nothing has a series")
	}

	renewed, err := Renew(ca, Options{Validity: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := renewed.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	now = now.Add(30 * time.Second)
	if got := e.Expiries()["etcd-client"]; !got.Equal(first["etcd-client"]) {
		t.Error("the file was read again within the minute")
	}
	now = now.Add(31 * time.Second)
	if d := time.Until(e.Expiries()["etcd-client"]); d < 23*time.Hour {
		t.Errorf("a minute after the renewal the client certificate expires in %s, want a day", d)
	}

	pair, err := tls.X509KeyPair(renewed.Server.Cert, renewed.Server.Key)
	if err != nil {
		t.Fatal(err)
	}
	presented = []*x509.Certificate{pair.Leaf}
	now = now.Add(time.Minute)
	if got := e.Expiries()["etcd-server"]; !got.Equal(pair.Leaf.NotAfter) {
		t.Errorf("etcd-server expires %s, want the handshake's %s", got, pair.Leaf.NotAfter)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(e)
	if n, err := testutil.GatherAndCount(reg, ExpiryMetric); err != nil || n != 3 {
		t.Errorf("%d series (%v), want etcd-ca, etcd-client and etcd-server", n, err)
	}
}
