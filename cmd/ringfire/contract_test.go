package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/ringfire/ringfire/internal/certs"
	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/internal/promreg"
	"github.com/ringfire/ringfire/internal/replica"
)

// describing records what registers on it, and passes it on.
type describing struct {
	prometheus.Registerer
	descs []string
}

func (d *describing) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		d.descs = append(d.descs, desc.String())
	}
	return d.Registerer.Register(c)
}

var descParts = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*constLabels: \{(.*)\}, variableLabels: \{(.*)\}\}$`)

// labelsOf returns a Desc's name and label names, const and variable, sorted.
func labelsOf(t *testing.T, desc string) (string, []string) {
	t.Helper()
	m := descParts.FindStringSubmatch(desc)
	if m == nil {
		t.Fatalf("cannot read %s", desc)
	}
	var labels []string
	for _, pair := range strings.Split(m[2], ",") {
		if name, _, ok := strings.Cut(pair, "="); ok {
			labels = append(labels, name)
		}
	}
	for _, name := range strings.Split(m[3], ",") {
		if name != "" {
			labels = append(labels, name)
		}
	}
	slices.Sort(labels)
	return m[1], slices.Compact(labels)
}

// A replica wired as `ringfire run` wires it registers every metric of the
// contract (internal/promreg.Contract), with the contract's labels. (The
// end-to-end check of a running replica, e2e/metricstest, also sees their
// types and data.)
func TestReplicaRegistersTheContract(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		list := metav1.APIResourceList{GroupVersion: "batch.volcano.sh/v1alpha1",
			APIResources: []metav1.APIResource{{Name: "jobs", Namespaced: true, Kind: "Job"}, {Name: "cronjobs", Namespaced: true, Kind: "CronJob"}}}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	}))
	defer api.Close()
	rec := &describing{Registerer: prometheus.NewRegistry()}
	if err := registerProcessMetrics(rec, certs.NewExpiry(nil, nil)); err != nil {
		t.Fatal(err)
	}
	etcd := localetcd.StartForTest(t)
	cfg := replica.DefaultConfig()
	cfg.ID, cfg.Etcd, cfg.Prefix, cfg.LeaseTTL = "r0", localetcd.ClientForTest(t, etcd.Endpoint()), "/contract", 2*time.Second
	cfg.Kube, cfg.Registerer = &rest.Config{Host: api.URL}, rec
	if _, err := replica.New(cfg); err != nil {
		t.Fatal(err)
	}
	seen := map[string][][]string{}
	for _, desc := range rec.descs {
		name, labels := labelsOf(t, desc)
		seen[name] = append(seen[name], labels)
	}
	for _, m := range promreg.Contract {
		want := slices.Sorted(slices.Values(m.Labels))
		all, ok := seen[m.Name]
		if !ok {
			t.Errorf("%s is not registered", m.Name)
			continue
		}
		for _, labels := range all {
			if !slices.Equal(labels, want) {
				t.Errorf("%s has labels %v, want %v", m.Name, labels, want)
			}
		}
	}
}
