package promreg

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func counter(name string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: name})
}

// A failing registration leaves nothing of its batch behind, so the caller
// may try again or give up without a half-registered set.
func TestRegisterAllOrNone(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := Register(reg, counter("a_total"), counter("b_total")); err != nil {
		t.Fatal(err)
	}
	if err := Register(reg, counter("c_total"), counter("a_total")); err == nil {
		t.Fatal("registering a_total twice did not fail")
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "c_total" {
			t.Fatal("c_total stayed registered after its batch failed")
		}
	}
	if err := Register(reg, counter("c_total")); err != nil {
		t.Fatalf("c_total could not be registered after the failed batch: %v", err)
	}
	if err := Register(nil, counter("d_total")); err != nil {
		t.Fatalf("a nil registerer: %v", err)
	}
}

// The contract names each metric once, with a known type and, for a
// histogram, the base name (the _bucket, _sum and _count series follow).
func TestContractIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range Contract {
		if seen[m.Name] {
			t.Errorf("%s is listed twice", m.Name)
		}
		seen[m.Name] = true
		switch m.Type {
		case "counter", "gauge", "histogram":
		default:
			t.Errorf("%s: type %q", m.Name, m.Type)
		}
		if m.Type == "counter" && !strings.HasSuffix(m.Name, "_total") {
			t.Errorf("counter %s does not end in _total", m.Name)
		}
	}
	if len(contractNames()) != len(Contract) {
		t.Error("contractNames and Contract differ in length")
	}
}
