package scheduler

import (
	"math"
	"testing"

	kubefake "k8s.io/client-go/kubernetes/fake"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/internal/validatetest"
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
	validatetest.Run(t, valid, (*Config).Validate, func(c Config) error { _, err := New(c); return err }, []validatetest.Case[Config]{
		{Name: "defaults"},
		{Name: "names unsorted, twice", Edit: func(c *Config) { c.SchedulerNames = []string{"b", "a", "b"} }},
		{Name: "no logger", Edit: func(c *Config) { c.Logger = nil }},
		{Name: "no kube", Edit: func(c *Config) { c.Kube = nil }, Want: []string{"Kube"}},
		{Name: "no ownership", Edit: func(c *Config) { c.Ownership = nil }, Want: []string{"Ownership"}},
		{Name: "no volcano", Edit: func(c *Config) { c.Volcano = nil }, Want: []string{"Volcano"}},
		{Name: "no scheduler names", Edit: func(c *Config) { c.SchedulerNames = nil }, Want: []string{"scheduler names []"}},
		{Name: "empty scheduler name", Edit: func(c *Config) { c.SchedulerNames = []string{"a", ""} }, Want: []string{`scheduler names ["a" ""]`}},
		{Name: "no period", Edit: func(c *Config) { c.Period = 0 }, Want: []string{"period 0s"}},
		{Name: "negative debounce", Edit: func(c *Config) { c.Debounce = -1 }, Want: []string{"debounce -1ns"}},
		{Name: "no message quiet", Edit: func(c *Config) { c.MessageQuiet = 0 }, Want: []string{"message quiet 0s"}},
		{Name: "no pods quiet", Edit: func(c *Config) { c.PodsQuiet = 0 }, Want: []string{"pods quiet 0s"}},
		{Name: "no parallelism", Edit: func(c *Config) { c.Parallelism = 0 }, Want: []string{"parallelism 0"}},
		{Name: "overcommit NaN", Edit: func(c *Config) { c.Options.OvercommitFactor = math.NaN() }, Want: []string{"overcommit factor NaN"}},
		{Name: "zero value", Edit: func(c *Config) { *c = Config{} }, Want: []string{
			"Kube", "Ownership", "Volcano", "scheduler names", "period 0s", "debounce 0s", "message quiet 0s", "pods quiet 0s", "parallelism 0",
		}},
	})
}
