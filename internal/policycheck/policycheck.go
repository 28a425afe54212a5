// Package policycheck checks, at a replica's start and every minute, that the admission
// policies and bindings ringfire relies on are installed (deploy/crds, crds.Policies). Without
// them a cluster still runs every Job, but admission no longer refuses what only they refuse: a
// tenant's object in a slot (ringfire-slot), any user's Command closing any Queue
// (ringfire-queue-command), a template or gang past ringfire's limits, among others. A missing
// one is a metric, ringfire_admission_policy_missing{policy}, which the alert
// RingfireAdmissionPolicyMissing and the status page read, and a Warning log line that names
// it and the install command, once each time the missing set changes. A kind the API server
// does not serve (MutatingAdmissionPolicy before Kubernetes 1.36) cannot be missing.
package policycheck

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/ringfire/ringfire/deploy/crds"
)

// Metric is the gauge of a missing policy: 1 for each policy or binding, by "<Kind>/<name>",
// that the API server serves the kind of and does not have; 0 once it has it.
const Metric = "ringfire_admission_policy_missing"

// Period is how often the check runs after the first.
const Period = time.Minute

// InstallCommand is what the log line tells to run.
const InstallCommand = "kubectl apply --server-side -k deploy/crds (or the Helm chart with its admission policies on)"

// Checker runs the check.
type Checker struct {
	client    dynamic.Interface
	discovery discovery.DiscoveryInterface
	want      []crds.Policy
	gauge     *prometheus.GaugeVec
	log       hclog.Logger
	missing   []string // as last logged
}

// New builds a Checker; reg, if set, gets its gauge.
func New(client dynamic.Interface, dc discovery.DiscoveryInterface, reg prometheus.Registerer, log hclog.Logger) (*Checker, error) {
	want, err := crds.Policies()
	if err != nil {
		return nil, fmt.Errorf("admission policies: %w", err)
	}
	c := &Checker{client: client, discovery: dc, want: want, log: log,
		gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: Metric,
			Help: "1 for each admission policy or binding ringfire relies on (deploy/crds) that the API server serves the kind of and does not have, by <Kind>/<name>; 0 once it has it.",
		}, []string{"policy"})}
	if reg != nil {
		if err := reg.Register(c.gauge); err != nil {
			return nil, fmt.Errorf("admission policies: %w", err)
		}
	}
	return c, nil
}

// Run checks now and every Period until ctx is done.
func (c *Checker) Run(ctx context.Context) {
	for {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		missing, err := c.Check(cctx)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			c.log.Warn("could not check the admission policies; trying again", "in", Period, "error", err)
		case err == nil && !slices.Equal(missing, c.missing):
			if len(missing) > 0 {
				c.log.Warn("admission policies ringfire relies on are missing: admission does not refuse what only they refuse (a tenant's object in a slot, a Command closing another's Queue, a template past the limits); install them",
					"missing", strings.Join(missing, ", "), "install", InstallCommand)
			} else if c.missing != nil {
				c.log.Info("every admission policy ringfire relies on is installed again")
			}
			c.missing = missing
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(Period):
		}
	}
}

// Check lists the policies and bindings of each kind served and sets the gauge; it returns
// the missing ones, by "<Kind>/<name>", sorted.
func (c *Checker) Check(ctx context.Context) ([]string, error) {
	list, err := c.discovery.ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("discover admissionregistration.k8s.io/v1: %w", err)
	}
	served := map[string]bool{}
	if list != nil {
		for _, r := range list.APIResources {
			served[r.Name] = true
		}
	}
	have := map[string]map[string]bool{}
	missing := []string{}
	for _, p := range c.want {
		id := p.Kind + "/" + p.Name
		if !served[p.Resource.Resource] {
			c.gauge.DeleteLabelValues(id)
			continue
		}
		if have[p.Resource.Resource] == nil {
			names, err := c.names(ctx, p)
			if err != nil {
				return nil, err
			}
			have[p.Resource.Resource] = names
		}
		if have[p.Resource.Resource][p.Name] {
			c.gauge.WithLabelValues(id).Set(0)
			continue
		}
		c.gauge.WithLabelValues(id).Set(1)
		missing = append(missing, id)
	}
	slices.Sort(missing)
	return missing, nil
}

// names lists the names of the objects of p's resource, a page at a time.
func (c *Checker) names(ctx context.Context, p crds.Policy) (map[string]bool, error) {
	names := map[string]bool{}
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := c.client.Resource(p.Resource).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", p.Resource.Resource, err)
		}
		for _, o := range list.Items {
			names[o.GetName()] = true
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return names, nil
		}
	}
}
