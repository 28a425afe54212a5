package certs

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ExpiryMetric is the name of the gauge Expiry exports.
const ExpiryMetric = "ringfire_certificate_expiry_timestamp_seconds"

// rereadEvery is how stale a file's reading may be: a renewal shows within it.
const rereadEvery = time.Minute

// Probe returns the certificates a TLS peer presents now, from a handshake of its own.
type Probe func(context.Context) ([]*x509.Certificate, error)

// probeTimeout bounds a probe, which runs on a scrape once a minute: a scrape waits for it.
const probeTimeout = time.Second

// Expiry is a Prometheus collector of when certificates expire: for each named PEM file, the
// earliest NotAfter of the certificates in it, and for each named probe, of the chain the
// peer presents in a fresh handshake. It reads them again at most every minute (on a scrape),
// so a renewal shows without a restart. A file that cannot be read or parsed, or a peer that
// does not answer, has no series until it can be (etcd's client, which reads the same files
// on each handshake, says why in its errors).
type Expiry struct {
	desc   *prometheus.Desc
	files  map[string]string // certificate label → path
	probes map[string]Probe  // certificate label → its peer

	mu     sync.Mutex
	readAt time.Time
	read   map[string]time.Time
	now    func() time.Time
}

// NewExpiry watches files (certificate label → path of a PEM file) and the peers of probes
// (certificate label → probe); either may be empty.
func NewExpiry(files map[string]string, probes map[string]Probe) *Expiry {
	return &Expiry{
		desc: prometheus.NewDesc(ExpiryMetric,
			"When a certificate ringfire uses expires (Unix seconds): the earliest NotAfter of its file, or of the chain the etcd server presents in a handshake, re-read every minute.",
			[]string{"certificate"}, nil),
		files:  files,
		probes: probes,
		now:    time.Now,
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
		for label, probe := range e.probes {
			ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
			chain, err := probe(ctx)
			cancel()
			if notAfter, ok := earliest(chain); err == nil && ok {
				e.read[label] = notAfter
			}
		}
	}
	return maps.Clone(e.read)
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
