package certs

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ExpiryMetric is the name of the gauge Expiry exports.
const ExpiryMetric = "ringfire_certificate_expiry_timestamp_seconds"

// rereadEvery is how stale a file's reading may be: a renewal shows within it.
const rereadEvery = time.Minute

// Expiry is a Prometheus collector of when certificates expire: for each named PEM file, the
// earliest NotAfter of the certificates in it, read again at most every minute (on a scrape),
// so a renewal written into the file shows without a restart; and for each TLS peer it is
// told of (Observe), the earliest NotAfter of the chain the last handshake presented. A file
// that cannot be read or parsed has no series (etcd's client, which reads the same files on
// each handshake, says why in its errors).
type Expiry struct {
	desc  *prometheus.Desc
	files map[string]string // certificate label → path

	mu     sync.Mutex
	readAt time.Time
	read   map[string]time.Time
	seen   map[string]time.Time // certificate label → NotAfter seen in a handshake
	now    func() time.Time
}

// NewExpiry watches files (certificate label → path of a PEM file); it may be empty.
func NewExpiry(files map[string]string) *Expiry {
	return &Expiry{
		desc: prometheus.NewDesc(ExpiryMetric,
			"When a certificate ringfire uses expires (Unix seconds): the earliest NotAfter of the file, re-read every minute, or of the chain the etcd server presented in the last handshake.",
			[]string{"certificate"}, nil),
		files: files,
		seen:  map[string]time.Time{},
		now:   time.Now,
	}
}

// Observe returns a tls.Config.VerifyConnection that records, under label, the certificates
// the peer presents in each handshake (it never refuses one: verification is the config's).
func (e *Expiry) Observe(label string) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if notAfter, ok := earliest(cs.PeerCertificates); ok {
			e.mu.Lock()
			e.seen[label] = notAfter
			e.mu.Unlock()
		}
		return nil
	}
}

// Describe implements prometheus.Collector.
func (e *Expiry) Describe(ch chan<- *prometheus.Desc) { ch <- e.desc }

// Collect implements prometheus.Collector.
func (e *Expiry) Collect(ch chan<- prometheus.Metric) {
	for label, notAfter := range e.Expiries() {
		ch <- prometheus.MustNewConstMetric(e.desc, prometheus.GaugeValue, float64(notAfter.Unix()), label)
	}
}

// Expiries are the NotAfter times the metric reports, by certificate label.
func (e *Expiry) Expiries() map[string]time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	if now := e.now(); e.read == nil || now.Sub(e.readAt) >= rereadEvery {
		e.readAt = now
		e.read = map[string]time.Time{}
		for label, path := range e.files {
			if notAfter, err := fileExpiry(path); err == nil {
				e.read[label] = notAfter
			}
		}
	}
	out := make(map[string]time.Time, len(e.read)+len(e.seen))
	for label, t := range e.read {
		out[label] = t
	}
	for label, t := range e.seen {
		out[label] = t
	}
	return out
}

// fileExpiry is the earliest NotAfter of the certificates in a PEM file.
func fileExpiry(path string) (time.Time, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, err
	}
	var chain []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s: %w", path, err)
		}
		chain = append(chain, cert)
	}
	notAfter, ok := earliest(chain)
	if !ok {
		return time.Time{}, fmt.Errorf("%s: no PEM certificate", path)
	}
	return notAfter, nil
}

func earliest(chain []*x509.Certificate) (time.Time, bool) {
	var first time.Time
	for _, c := range chain {
		if first.IsZero() || c.NotAfter.Before(first) {
			first = c.NotAfter
		}
	}
	return first, !first.IsZero()
}
