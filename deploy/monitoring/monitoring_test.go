package monitoring

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite dashboard-configmap.yaml from dashboard.json")

// dashboardConfigMap wraps the dashboard in a ConfigMap that Grafana's
// dashboard sidecar loads (it watches ConfigMaps labelled grafana_dashboard).
func dashboardConfigMap(dashboard []byte) []byte {
	var b bytes.Buffer
	b.WriteString(`# Generated from dashboard.json by ` + "`go test ./deploy/monitoring -update`" + `; do not edit.
# The ringfire dashboard for Grafana's dashboard sidecar (kube-prometheus-stack,
# the grafana chart with sidecar.dashboards.enabled), which loads ConfigMaps
# labelled grafana_dashboard: "1". Apply it in a namespace the sidecar
# searches (its searchNamespace), or set that to ALL.
apiVersion: v1
kind: ConfigMap
metadata:
  name: ringfire-dashboard
  namespace: ringfire-system
  labels:
    grafana_dashboard: "1"
    app.kubernetes.io/name: ringfire
    app.kubernetes.io/component: monitoring
data:
  ringfire.json: |-
`)
	for line := range strings.Lines(strings.TrimRight(string(dashboard), "\n")) {
		b.WriteString("    " + line)
	}
	b.WriteString("\n")
	return b.Bytes()
}

func TestDashboardConfigMapInSync(t *testing.T) {
	dashboard, err := File("dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	want := dashboardConfigMap(dashboard)
	if *update {
		if err := os.WriteFile("dashboard-configmap.yaml", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := File("dashboard-configmap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("dashboard-configmap.yaml is not dashboard.json's: run `go test ./deploy/monitoring -update`")
	}
	// The wrapped dashboard reads back as dashboard.json.
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(got, &cm); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(cm.Data["ringfire.json"]) != strings.TrimSpace(string(dashboard)) {
		t.Fatal("the ConfigMap's ringfire.json differs from dashboard.json")
	}
}

// grafanaVars are the variables Grafana itself defines that the queries use.
var grafanaVars = []string{"__rate_interval", "__interval", "__range"}

func TestDashboardShape(t *testing.T) {
	d, err := LoadDashboard()
	if err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 39 {
		t.Errorf("dashboard uid %q, title %q, schemaVersion %d: want all set, schemaVersion >= 39", d.UID, d.Title, d.SchemaVersion)
	}
	defined := slices.Clone(grafanaVars)
	hasDatasource := false
	for _, v := range d.Templating.List {
		defined = append(defined, v.Name)
		if v.Name == "datasource" && v.Type == "datasource" && v.QueryText() == "prometheus" {
			hasDatasource = true
		}
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != "${datasource}") {
			t.Errorf("variable %s does not query ${datasource}", v.Name)
		}
	}
	if !hasDatasource {
		t.Error(`no template variable "datasource" of type datasource over prometheus`)
	}
	ids := map[int]string{}
	var check func([]Panel)
	check = func(panels []Panel) {
		for _, p := range panels {
			if other, dup := ids[p.ID]; dup {
				t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
			}
			ids[p.ID] = p.Title
			if g := p.GridPos; g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
				t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, g)
			}
			check(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q does not use ${datasource}", p.Title)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				if refs[tg.RefID] || tg.RefID == "" {
					t.Errorf("panel %q: refId %q empty or repeated", p.Title, tg.RefID)
				}
				refs[tg.RefID] = true
				if strings.TrimSpace(tg.Expr) == "" || tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
					t.Errorf("panel %q/%s: empty expression or not on ${datasource}", p.Title, tg.RefID)
				}
			}
		}
	}
	check(d.Panels)
	for _, q := range d.Queries() {
		for _, name := range Variables(q.Expr) {
			if !slices.Contains(defined, name) {
				t.Errorf("%s uses $%s, which the dashboard does not define", q, name)
			}
		}
	}
}

func TestRulesShape(t *testing.T) {
	pr, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Errorf("rules.yaml is %s %s, want monitoring.coreos.com/v1 PrometheusRule", pr.APIVersion, pr.Kind)
	}
	seen := map[string]bool{}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: a rule that is no alert (%q)", g.Name, r.Record)
				continue
			}
			if seen[r.Alert] || !strings.HasPrefix(r.Alert, "Ringfire") {
				t.Errorf("alert %s: repeated, or not named Ringfire...", r.Alert)
			}
			seen[r.Alert] = true
			if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) {
				t.Errorf("alert %s: severity %q, want critical, warning or info", r.Alert, r.Labels["severity"])
			}
			if strings.TrimSpace(r.Annotations["summary"]) == "" || strings.TrimSpace(r.Annotations["description"]) == "" {
				t.Errorf("alert %s: needs a summary and a description that says what to do", r.Alert)
			}
			// The ServiceMonitor's jobLabel makes job="ringfire"; a rule
			// without the selector would match other jobs' series.
			if !strings.Contains(r.Expr, `job="ringfire"`) {
				t.Errorf("alert %s: expression does not select job=\"ringfire\"", r.Alert)
			}
		}
	}
	if len(seen) == 0 {
		t.Fatal("rules.yaml has no alerts")
	}

	// The plain rule file is the spec, whole.
	file, err := RuleFile()
	if err != nil {
		t.Fatal(err)
	}
	var plain struct {
		Groups []RuleGroup `json:"groups"`
	}
	if err := json.Unmarshal(file, &plain); err != nil {
		t.Fatal(err)
	}
	if len(plain.Groups) != len(pr.Spec.Groups) {
		t.Errorf("rule file has %d groups, the PrometheusRule %d", len(plain.Groups), len(pr.Spec.Groups))
	}
}

func TestServiceMonitor(t *testing.T) {
	data, err := File("servicemonitor.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Spec struct {
			JobLabel string `json:"jobLabel"`
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			NamespaceSelector struct {
				MatchNames []string `json:"matchNames"`
			} `json:"namespaceSelector"`
			Endpoints []struct {
				Port string `json:"port"`
				Path string `json:"path"`
			} `json:"endpoints"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &sm); err != nil {
		t.Fatal(err)
	}
	if sm.APIVersion != "monitoring.coreos.com/v1" || sm.Kind != "ServiceMonitor" {
		t.Errorf("servicemonitor.yaml is %s %s", sm.APIVersion, sm.Kind)
	}
	if sm.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != "ringfire" || sm.Spec.JobLabel != "app.kubernetes.io/name" {
		t.Errorf("selector %v, jobLabel %q: want app.kubernetes.io/name=ringfire for both", sm.Spec.Selector.MatchLabels, sm.Spec.JobLabel)
	}
	if !slices.Equal(sm.Spec.NamespaceSelector.MatchNames, []string{"ringfire-system"}) || sm.Metadata.Namespace != "ringfire-system" {
		t.Errorf("namespaces %v / %q, want ringfire-system", sm.Spec.NamespaceSelector.MatchNames, sm.Metadata.Namespace)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "http" || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("endpoints %+v, want port http, path /metrics", sm.Spec.Endpoints)
	}
}

func TestExpand(t *testing.T) {
	values := map[string]string{"job": "ringfire", "pod": ".*", "__rate_interval": "5s"}
	got, err := Expand(`rate(x{job="$job", pod=~"${pod}"}[$__rate_interval])`, values)
	if want := `rate(x{job="ringfire", pod=~".*"}[5s])`; err != nil || got != want {
		t.Errorf("Expand = %q, %v; want %q", got, err, want)
	}
	if _, err := Expand(`x{pod=~"${pod:regex}", ns="$namespace"}`, values); err == nil || !strings.Contains(err.Error(), "$namespace") {
		t.Errorf("Expand with an unknown variable: %v, want an error naming $namespace", err)
	}
}
