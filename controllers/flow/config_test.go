package flow

import (
	"errors"
	"testing"

	kubefake "k8s.io/client-go/kubernetes/fake"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"
	vcinformers "volcano.sh/apis/pkg/client/informers/externalversions"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/internal/validatetest"
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
	validatetest.Run(t, valid, (*Config).Validate, func(c Config) error {
		_, errFlows := NewFlows(c)
		_, errTemplates := NewTemplates(c)
		return errors.Join(errFlows, errTemplates)
	}, []validatetest.Case[Config]{
		{Name: "defaults"},
		{Name: "no coalescing", Edit: func(c *Config) { c.StatusCoalesce = 0 }},
		{Name: "negative coalescing", Edit: func(c *Config) { c.StatusCoalesce = -1 }},
		{Name: "no kube", Edit: func(c *Config) { c.Kube = nil }, Want: []string{"Kube"}},
		{Name: "no ownership", Edit: func(c *Config) { c.Ownership = nil }, Want: []string{"Ownership"}},
		{Name: "no volcano", Edit: func(c *Config) { c.Volcano = nil }, Want: []string{"Volcano"}},
		{Name: "no flows", Edit: func(c *Config) { c.JobFlows = nil }, Want: []string{"JobFlows"}},
		{Name: "no templates", Edit: func(c *Config) { c.JobTemplates = nil }, Want: []string{"JobTemplates"}},
		{Name: "no jobs", Edit: func(c *Config) { c.Jobs = nil }, Want: []string{"Jobs informer"}},
		{Name: "no expectations", Edit: func(c *Config) { c.Expectations = nil }, Want: []string{"Expectations"}},
		{Name: "no workers", Edit: func(c *Config) { c.Workers = 0 }, Want: []string{"workers 0"}},
		{Name: "max requeue", Edit: func(c *Config) { c.MaxRequeue = -2 }, Want: []string{"max requeue -2"}},
		{Name: "zero value", Edit: func(c *Config) { *c = Config{} }, Want: []string{
			"Kube", "Ownership", "Volcano", "JobFlows", "JobTemplates", "Jobs informer", "Expectations", "workers 0",
		}},
	})
}
