package job

import (
	"fmt"
	"strings"
	"testing"

	kubefake "k8s.io/client-go/kubernetes/fake"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/shard"
)

// TestConfigValidate: DefaultConfig with the clients set validates, each
// field that cannot work is reported, and Validate changes nothing.
func TestConfigValidate(t *testing.T) {
	valid := func() Config {
		cfg := DefaultConfig()
		kube, vc := kubefake.NewClientset(), vcfake.NewSimpleClientset()
		cfg.Kube, cfg.Volcano, cfg.Ownership = kube, vc, shard.HoldAll{}
		cfg.Cache = cache.New(cache.Config{Kube: kube, Volcano: vc})
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
		{name: "no cache", edit: func(c *Config) { c.Cache = nil }, want: []string{"Cache"}},
		{name: "no workers", edit: func(c *Config) { c.Workers = 0 }, want: []string{"workers 0"}},
		{name: "max requeue", edit: func(c *Config) { c.MaxRequeue = -2 }, want: []string{"max requeue -2"}},
		{name: "no scheduler name", edit: func(c *Config) { c.SchedulerName = "" }, want: []string{"scheduler name"}},
		{name: "no pod parallelism", edit: func(c *Config) { c.PodParallelism = 0 }, want: []string{"pod parallelism 0"}},
		{name: "zero value", edit: func(c *Config) { *c = Config{} }, want: []string{
			"Kube", "Ownership", "Volcano", "Cache", "workers 0", "scheduler name", "pod parallelism 0",
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
