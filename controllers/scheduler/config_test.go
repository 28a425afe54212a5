package scheduler

import (
	"fmt"
	"math"
	"strings"
	"testing"

	kubefake "k8s.io/client-go/kubernetes/fake"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/shard"
)

// TestConfigValidate: DefaultConfig with the clients set validates, each
// field that cannot work is reported, and Validate changes nothing.
func TestConfigValidate(t *testing.T) {
	valid := func() Config {
		cfg := DefaultConfig()
		cfg.Kube, cfg.Volcano, cfg.Ownership = kubefake.NewClientset(), vcfake.NewSimpleClientset(), shard.HoldAll{}
		return cfg
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want []string // in the error; none: valid
	}{
		{name: "defaults"},
		{name: "names unsorted, twice", edit: func(c *Config) { c.SchedulerNames = []string{"b", "a", "b"} }},
		{name: "no logger", edit: func(c *Config) { c.Logger = nil }},
		{name: "no kube", edit: func(c *Config) { c.Kube = nil }, want: []string{"Kube"}},
		{name: "no ownership", edit: func(c *Config) { c.Ownership = nil }, want: []string{"Ownership"}},
		{name: "no volcano", edit: func(c *Config) { c.Volcano = nil }, want: []string{"Volcano"}},
		{name: "no scheduler names", edit: func(c *Config) { c.SchedulerNames = nil }, want: []string{"scheduler names []"}},
		{name: "empty scheduler name", edit: func(c *Config) { c.SchedulerNames = []string{"a", ""} }, want: []string{`scheduler names ["a" ""]`}},
		{name: "no period", edit: func(c *Config) { c.Period = 0 }, want: []string{"period 0s"}},
		{name: "negative debounce", edit: func(c *Config) { c.Debounce = -1 }, want: []string{"debounce -1ns"}},
		{name: "no message quiet", edit: func(c *Config) { c.MessageQuiet = 0 }, want: []string{"message quiet 0s"}},
		{name: "no pods quiet", edit: func(c *Config) { c.PodsQuiet = 0 }, want: []string{"pods quiet 0s"}},
		{name: "no parallelism", edit: func(c *Config) { c.Parallelism = 0 }, want: []string{"parallelism 0"}},
		{name: "overcommit NaN", edit: func(c *Config) { c.Options.OvercommitFactor = math.NaN() }, want: []string{"overcommit factor NaN"}},
		{name: "zero value", edit: func(c *Config) { *c = Config{} }, want: []string{
			"Kube", "Ownership", "Volcano", "scheduler names", "period 0s", "debounce 0s", "message quiet 0s", "pods quiet 0s", "parallelism 0",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid()
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			// Compared as printed: the fake clients hold funcs, which DeepEqual never
			// finds equal; %#v shows pointers and funcs by address, slices by content.
			before := fmt.Sprintf("%#v", cfg)
			err := cfg.Validate()
			if after := fmt.Sprintf("%#v", cfg); after != before {
				t.Errorf("Validate changed the config:\n%s\nto\n%s", before, after)
			}
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if _, err := New(cfg); err != nil {
					t.Fatalf("New: %v", err)
				}
				if after := fmt.Sprintf("%#v", cfg); after != before {
					t.Errorf("New changed its caller's config:\n%s\nto\n%s", before, after)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate passed, want an error naming %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if _, err := New(cfg); err == nil {
				t.Error("New built a controller from a config Validate rejects")
			}
		})
	}
}
