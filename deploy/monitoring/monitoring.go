// Package monitoring holds ringfire's monitoring manifests, a kustomization of their own
// (kustomization.yaml): the ServiceMonitor that scrapes every replica, the alerts
// (prometheusrule.yaml, with their promtool unit tests in rules_test.yaml) and the Grafana
// dashboard (grafana-dashboard.json, also a ConfigMap for Grafana's dashboard sidecar).
//
// The package gives the tests the alerts as a plain Prometheus rule file (RuleFile) and the
// dashboard's panels and queries (LoadDashboard), so that a real Prometheus can load the one and
// answer the other (e2e/monitoringtest).
package monitoring

import (
	"embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

//go:embed prometheusrule.yaml grafana-dashboard.json rules_test.yaml
var files embed.FS

// RuleFile returns the alerts of prometheusrule.yaml as a Prometheus rule file: the
// PrometheusRule's spec.groups under a top-level groups key, as `promtool check rules` and
// Prometheus's rule_files take them without the Operator.
func RuleFile() ([]byte, error) {
	var pr struct {
		Spec struct {
			Groups []RuleGroup `json:"groups"`
		} `json:"spec"`
	}
	data, err := files.ReadFile("prometheusrule.yaml")
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(data, &pr); err != nil {
		return nil, fmt.Errorf("prometheusrule.yaml: %w", err)
	}
	if len(pr.Spec.Groups) == 0 {
		return nil, fmt.Errorf("prometheusrule.yaml: no spec.groups")
	}
	return yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
}

// RuleGroup is one group of the PrometheusRule.
type RuleGroup struct {
	Name  string `json:"name"`
	Rules []Rule `json:"rules"`
}

// Rule is one alerting rule.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Alerts returns the alerting rules of prometheusrule.yaml, in file order.
func Alerts() ([]Rule, error) {
	data, err := RuleFile()
	if err != nil {
		return nil, err
	}
	var rf struct {
		Groups []RuleGroup `json:"groups"`
	}
	if err := yaml.Unmarshal(data, &rf); err != nil {
		return nil, err
	}
	var out []Rule
	for _, g := range rf.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

// RuleTests returns rules_test.yaml, promtool's unit tests of the alerts; they read the rules
// from rules.yaml beside them (write RuleFile there).
func RuleTests() ([]byte, error) { return files.ReadFile("rules_test.yaml") }

// Dashboard is the part of a Grafana dashboard the checks read.
type Dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Panel is a dashboard panel; a row (Type "row") groups the panels below it.
type Panel struct {
	ID          int         `json:"id"`
	Type        string      `json:"type"`
	Title       string      `json:"title"`
	Datasource  *Datasource `json:"datasource"`
	Targets     []Target    `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Panels []Panel `json:"panels"` // of a collapsed row
}

// Datasource names a panel's or target's data source, typically by a variable (${datasource}).
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Target is one query of a panel.
type Target struct {
	RefID        string      `json:"refId"`
	Expr         string      `json:"expr"`
	LegendFormat string      `json:"legendFormat"`
	Datasource   *Datasource `json:"datasource"`
}

// Variable is a template variable of the dashboard.
type Variable struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Query any    `json:"query"` // a string, or {query, refId} for a Prometheus query variable
}

// DashboardJSON returns grafana-dashboard.json as it is.
func DashboardJSON() ([]byte, error) { return files.ReadFile("grafana-dashboard.json") }

// LoadDashboard decodes grafana-dashboard.json.
func LoadDashboard() (*Dashboard, error) {
	data, err := DashboardJSON()
	if err != nil {
		return nil, err
	}
	d := &Dashboard{}
	if err := json.Unmarshal(data, d); err != nil {
		return nil, fmt.Errorf("grafana-dashboard.json: %w", err)
	}
	return d, nil
}

// AllPanels returns every panel that is not a row, those of collapsed rows included, in order.
func (d *Dashboard) AllPanels() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			if p.Type != "row" {
				out = append(out, p)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// Substitute replaces the dashboard variables of expr ($name and ${name}) by their values in
// vars; a variable vars lacks is left as it is.
func Substitute(expr string, vars map[string]string) string {
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	// Longest first, so that $pod does not cut into a longer $podgroup.
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	for _, name := range names {
		expr = strings.ReplaceAll(expr, "${"+name+"}", vars[name])
		expr = strings.ReplaceAll(expr, "$"+name, vars[name])
	}
	return expr
}
