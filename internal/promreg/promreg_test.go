package promreg

import (
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
