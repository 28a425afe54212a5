package queue

import (
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
		{Name: "no kube", Edit: func(c *Config) { c.Kube = nil }, Want: []string{"Kube"}},
		{Name: "no ownership", Edit: func(c *Config) { c.Ownership = nil }, Want: []string{"Ownership"}},
		{Name: "no volcano", Edit: func(c *Config) { c.Volcano = nil }, Want: []string{"Volcano"}},
		{Name: "no workers", Edit: func(c *Config) { c.Workers = 0 }, Want: []string{"workers 0"}},
		{Name: "max requeue", Edit: func(c *Config) { c.MaxRequeue = -2 }, Want: []string{"max requeue -2"}},
		{Name: "no status interval", Edit: func(c *Config) { c.StatusInterval = 0 }, Want: []string{"status interval 0s"}},
		{Name: "negative status interval", Edit: func(c *Config) { c.StatusInterval = -1 }, Want: []string{"status interval -1ns"}},
		{Name: "shared, partly", Edit: func(c *Config) { c.Shared = &Informers{} }, Want: []string{"shared informers"}},
		{Name: "zero value", Edit: func(c *Config) { *c = Config{} }, Want: []string{
			"Kube", "Ownership", "Volcano", "workers 0", "status interval 0s",
		}},
	})
}
