package queue

import (
	"fmt"
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
		{name: "no kube", edit: func(c *Config) { c.Kube = nil }, want: []string{"Kube"}},
		{name: "no ownership", edit: func(c *Config) { c.Ownership = nil }, want: []string{"Ownership"}},
		{name: "no volcano", edit: func(c *Config) { c.Volcano = nil }, want: []string{"Volcano"}},
		{name: "no workers", edit: func(c *Config) { c.Workers = 0 }, want: []string{"workers 0"}},
		{name: "max requeue", edit: func(c *Config) { c.MaxRequeue = -2 }, want: []string{"max requeue -2"}},
		{name: "no status interval", edit: func(c *Config) { c.StatusInterval = 0 }, want: []string{"status interval 0s"}},
		{name: "negative status interval", edit: func(c *Config) { c.StatusInterval = -1 }, want: []string{"status interval -1ns"}},
		{name: "shared, partly", edit: func(c *Config) { c.Shared = &Informers{} }, want: []string{"shared informers"}},
		{name: "zero value", edit: func(c *Config) { *c = Config{} }, want: []string{
			"Kube", "Ownership", "Volcano", "workers 0", "status interval 0s",
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
