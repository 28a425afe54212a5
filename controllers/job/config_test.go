package job

import (
	"testing"

	kubefake "k8s.io/client-go/kubernetes/fake"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/internal/validatetest"
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
	validatetest.Run(t, valid, (*Config).Validate, func(c Config) error { _, err := New(c); return err }, []validatetest.Case[Config]{
		{Name: "defaults"},
		{Name: "no coalescing", Edit: func(c *Config) { c.StatusCoalesce = 0 }},
		{Name: "negative coalescing", Edit: func(c *Config) { c.StatusCoalesce = -1 }},
		{Name: "no kube", Edit: func(c *Config) { c.Kube = nil }, Want: []string{"Kube"}},
		{Name: "no ownership", Edit: func(c *Config) { c.Ownership = nil }, Want: []string{"Ownership"}},
		{Name: "no volcano", Edit: func(c *Config) { c.Volcano = nil }, Want: []string{"Volcano"}},
		{Name: "no cache", Edit: func(c *Config) { c.Cache = nil }, Want: []string{"Cache"}},
		{Name: "no workers", Edit: func(c *Config) { c.Workers = 0 }, Want: []string{"workers 0"}},
		{Name: "max requeue", Edit: func(c *Config) { c.MaxRequeue = -2 }, Want: []string{"max requeue -2"}},
		{Name: "no scheduler name", Edit: func(c *Config) { c.SchedulerName = "" }, Want: []string{"scheduler name"}},
		{Name: "no pod parallelism", Edit: func(c *Config) { c.PodParallelism = 0 }, Want: []string{"pod parallelism 0"}},
		{Name: "zero value", Edit: func(c *Config) { *c = Config{} }, Want: []string{
			"Kube", "Ownership", "Volcano", "Cache", "workers 0", "scheduler name", "pod parallelism 0",
		}},
	})
}
