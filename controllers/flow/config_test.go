package flow

import (
	"fmt"
	"strings"
	"testing"

	kubefake "k8s.io/client-go/kubernetes/fake"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"
	vcinformers "volcano.sh/apis/pkg/client/informers/externalversions"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/shard"
)

// TestConfigValidate: DefaultConfig with the clients and informers set
// validates, each field that cannot work is reported, and Validate changes
// nothing.
func TestConfigValidate(t *testing.T) {
	valid := func() Config {
		vc := vcfake.NewSimpleClientset()
		inf := vcinformers.NewSharedInformerFactory(vc, 0)
		cfg := DefaultConfig()
		cfg.Kube, cfg.Volcano, cfg.Ownership = kubefake.NewClientset(), vc, shard.HoldAll{}
		cfg.JobFlows, cfg.JobTemplates = inf.Flow().V1alpha1().JobFlows(), inf.Flow().V1alpha1().JobTemplates()
		cfg.Jobs = inf.Batch().V1alpha1().Jobs().Informer()
		cfg.Expectations = cache.NewExpectations(0)
		return cfg
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want []string // in the error; none: valid
	}{
		{name: "defaults"},
		{name: "no coalescing", edit: func(c *Config) { c.StatusCoalesce = 0 }},
		{name: "negative coalescing", edit: func(c *Config) { c.StatusCoalesce = -1 }},
		{name: "no kube", edit: func(c *Config) { c.Kube = nil }, want: []string{"Kube"}},
		{name: "no ownership", edit: func(c *Config) { c.Ownership = nil }, want: []string{"Ownership"}},
		{name: "no volcano", edit: func(c *Config) { c.Volcano = nil }, want: []string{"Volcano"}},
		{name: "no flows", edit: func(c *Config) { c.JobFlows = nil }, want: []string{"JobFlows"}},
		{name: "no templates", edit: func(c *Config) { c.JobTemplates = nil }, want: []string{"JobTemplates"}},
		{name: "no jobs", edit: func(c *Config) { c.Jobs = nil }, want: []string{"Jobs informer"}},
		{name: "no expectations", edit: func(c *Config) { c.Expectations = nil }, want: []string{"Expectations"}},
		{name: "no workers", edit: func(c *Config) { c.Workers = 0 }, want: []string{"workers 0"}},
		{name: "max requeue", edit: func(c *Config) { c.MaxRequeue = -2 }, want: []string{"max requeue -2"}},
		{name: "zero value", edit: func(c *Config) { *c = Config{} }, want: []string{
			"Kube", "Ownership", "Volcano", "JobFlows", "JobTemplates", "Jobs informer", "Expectations", "workers 0",
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
			if _, err := NewFlows(cfg); err == nil {
				t.Error("NewFlows built a controller from a config Validate rejects")
			}
			if _, err := NewTemplates(cfg); err == nil {
				t.Error("NewTemplates built a controller from a config Validate rejects")
			}
		})
	}
}
