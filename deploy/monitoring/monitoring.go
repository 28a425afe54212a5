// Package monitoring holds ringfire's monitoring manifests and reads them for
// the tests that check them:
//
//   - servicemonitor.yaml: a Prometheus Operator ServiceMonitor scraping every
//     replica's /metrics through the headless Service's port http;
//   - rules.yaml: a PrometheusRule with ringfire's alerts; its spec is a plain
//     Prometheus rule file too (RuleFile);
//   - dashboard.json: a Grafana dashboard over a ${datasource} variable;
//   - dashboard-configmap.yaml: the same dashboard as a ConfigMap for
//     Grafana's dashboard sidecar, generated from dashboard.json
//     (`go test ./deploy/monitoring -update`).
//
// e2e/monitoringtest runs every dashboard query and loads every rule into a
// real Prometheus scraping real replicas; docs/monitoring.md says what each
// alert means and what to do.
package monitoring

import (
	"embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

//go:embed servicemonitor.yaml rules.yaml dashboard.json dashboard-configmap.yaml
var files embed.FS

// File returns one of the embedded manifests by name.
func File(name string) ([]byte, error) {
	data, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("monitoring manifest %s: %w", name, err)
	}
	return data, nil
}

// PrometheusRule is the part of rules.yaml the tests read.
type PrometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Groups []RuleGroup `json:"groups"`
	} `json:"spec"`
}

// RuleGroup is a group of rules, as Prometheus and the operator both take it.
type RuleGroup struct {
	Name  string `json:"name"`
	Rules []Rule `json:"rules"`
}

// Rule is an alerting or recording rule.
type Rule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Rules parses rules.yaml.
func Rules() (PrometheusRule, error) {
	var pr PrometheusRule
	data, err := File("rules.yaml")
	if err != nil {
		return pr, err
	}
	// Strict: a misspelt field (anotations, for_) is an error, not a rule
	// that silently lacks it.
	if err := yaml.UnmarshalStrict(data, &pr); err != nil {
		return pr, fmt.Errorf("rules.yaml: %w", err)
	}
	return pr, nil
}

// RuleFile returns the PrometheusRule's spec as a plain Prometheus rule file
// (JSON, which Prometheus reads as YAML), for a Prometheus without the
// operator. It keeps every field of spec, so that Prometheus, not this
// package, judges them.
func RuleFile() ([]byte, error) {
	data, err := File("rules.yaml")
	if err != nil {
		return nil, err
	}
	var doc struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("rules.yaml: %w", err)
	}
	if len(doc.Spec) == 0 {
		return nil, fmt.Errorf("rules.yaml: no spec")
	}
	return doc.Spec, nil
}

// Dashboard is the part of a Grafana dashboard the tests read.
type Dashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []Variable `json:"list"`
	} `json:"templating"`
	Panels []Panel `json:"panels"`
}

// Variable is a template variable.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"` // a string, or {"query": ...} for a query variable
	Datasource *Datasource     `json:"datasource,omitempty"`
	AllValue   string          `json:"allValue,omitempty"`
	IncludeAll bool            `json:"includeAll"`
}

// QueryText returns the variable's query, whichever form it is stored in.
func (v Variable) QueryText() string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var q struct {
		Query string `json:"query"`
	}
	json.Unmarshal(v.Query, &q)
	return q.Query
}

// Datasource names a data source, here always the ${datasource} variable.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Panel is a dashboard panel; a row holds its panels only when collapsed.
type Panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *Datasource `json:"datasource,omitempty"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []Target `json:"targets"`
	Panels  []Panel  `json:"panels"`
}

// Target is one query of a panel.
type Target struct {
	RefID        string      `json:"refId"`
	Expr         string      `json:"expr"`
	LegendFormat string      `json:"legendFormat"`
	Datasource   *Datasource `json:"datasource,omitempty"`
}

// Query is a panel's target with the panel it belongs to.
type Query struct {
	Panel string // the panel's title
	Target
}

// String names the query as the dashboard shows it: panel and refId.
func (q Query) String() string { return fmt.Sprintf("%q/%s", q.Panel, q.RefID) }

// LoadDashboard parses dashboard.json.
func LoadDashboard() (Dashboard, error) {
	var d Dashboard
	data, err := File("dashboard.json")
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return d, fmt.Errorf("dashboard.json: %w", err)
	}
	return d, nil
}

// Queries returns every panel target of the dashboard, rows included, in
// the order the dashboard holds them.
func (d Dashboard) Queries() []Query {
	var out []Query
	var walk func([]Panel)
	walk = func(panels []Panel) {
		for _, p := range panels {
			for _, t := range p.Targets {
				out = append(out, Query{Panel: p.Title, Target: t})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// templateVar matches a Grafana template variable in a query: $name,
// ${name} or ${name:format}.
var templateVar = regexp.MustCompile(`\$(\w+)|\$\{(\w+)(?::\w+)?\}`)

// Variables returns the names of the template variables expr uses, in order,
// repeats included.
func Variables(expr string) []string {
	var names []string
	for _, m := range templateVar.FindAllStringSubmatch(expr, -1) {
		names = append(names, m[1]+m[2])
	}
	return names
}

// Expand replaces the template variables of expr by their values, as
// Grafana does before sending a query; a variable without a value is an
// error.
func Expand(expr string, values map[string]string) (string, error) {
	var missing []string
	out := templateVar.ReplaceAllStringFunc(expr, func(v string) string {
		name := Variables(v)[0]
		value, ok := values[name]
		if !ok {
			missing = append(missing, name)
		}
		return value
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("no value for $%s in %q", strings.Join(missing, ", $"), expr)
	}
	return out, nil
}
