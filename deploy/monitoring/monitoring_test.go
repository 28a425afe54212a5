package monitoring_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ringfire/ringfire/deploy/monitoring"
	"github.com/ringfire/ringfire/e2e/cluster"
)

// variableRef finds the dashboard variables an expression or a data source uses: $name or
// ${name}. Grafana's own ($__rate_interval, $__interval, ...) start with two underscores.
var variableRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)

// The dashboard as Grafana needs it: every panel has a data source, at least one query and a
// unit; every variable a query or data source uses is defined; no two panels share an id.
func TestDashboardIsWellFormed(t *testing.T) {
	d, err := monitoring.LoadDashboard()
	if err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("the dashboard needs a uid and a title (uid %q, title %q)", d.UID, d.Title)
	}
	defined := map[string]bool{}
	for _, v := range d.Templating.List {
		defined[v.Name] = true
	}
	uses := func(where, s string) {
		for _, m := range variableRef.FindAllStringSubmatch(s, -1) {
			if name := m[1]; !strings.HasPrefix(name, "__") && !defined[name] {
				t.Errorf("%s uses $%s, which the dashboard does not define", where, name)
			}
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			uses("variable "+v.Name, q["query"].(string))
		} else if q, ok := v.Query.(string); ok && v.Type == "query" {
			uses("variable "+v.Name, q)
		}
	}
	if !defined["datasource"] {
		t.Error("no datasource variable: the dashboard would be bound to one Prometheus")
	}

	ids := map[int]string{}
	var checkIDs func([]monitoring.Panel)
	checkIDs = func(ps []monitoring.Panel) {
		for _, p := range ps {
			if other, dup := ids[p.ID]; dup {
				t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
			}
			ids[p.ID] = p.Title
			checkIDs(p.Panels)
		}
	}
	checkIDs(d.Panels)

	panels := d.AllPanels()
	if len(panels) < 20 {
		t.Errorf("%d panels, want the ring, work, Jobs, API and replica rows (20 or more)", len(panels))
	}
	for _, p := range panels {
		where := "panel " + p.Title
		if p.Title == "" {
			t.Errorf("panel %d has no title", p.ID)
		}
		if p.FieldConfig.Defaults.Unit == "" {
			t.Errorf("%s has no unit (fieldConfig.defaults.unit)", where)
		}
		if p.Datasource != nil {
			uses(where+" data source", p.Datasource.UID)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s has no query", where)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("%s, query %s: no expr", where, tg.RefID)
			}
			if p.Datasource == nil && tg.Datasource == nil {
				t.Errorf("%s, query %s: no data source on the panel or the query", where, tg.RefID)
			}
			if tg.Datasource != nil {
				uses(where+" query "+tg.RefID+" data source", tg.Datasource.UID)
			}
			uses(where+" query "+tg.RefID, tg.Expr)
		}
	}
}

// Every alert says what it means and what to do in one line, and links to its own section
// of docs/operations.md, which exists.
func TestEveryAlertHasARunbook(t *testing.T) {
	alerts, err := monitoring.Alerts()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for line := range strings.Lines(string(doc)) {
		if strings.HasPrefix(line, "#") {
			anchors[githubAnchor(strings.TrimLeft(line, "# "))] = true
		}
	}
	const prefix = "https://github.com/ringfire/ringfire/blob/main/docs/operations.md#"
	seen := map[string]bool{}
	for _, a := range alerts {
		if seen[a.Alert] {
			t.Errorf("alert %s twice", a.Alert)
		}
		seen[a.Alert] = true
		if a.Labels["severity"] == "" {
			t.Errorf("%s: no severity label", a.Alert)
		}
		if a.Annotations["summary"] == "" {
			t.Errorf("%s: no summary", a.Alert)
		}
		if rb := a.Annotations["runbook"]; rb == "" || strings.Contains(rb, "\n") {
			t.Errorf("%s: runbook %q, want one line", a.Alert, rb)
		}
		url := a.Annotations["runbook_url"]
		anchor, ok := strings.CutPrefix(url, prefix)
		switch {
		case !ok:
			t.Errorf("%s: runbook_url %q is not under %s", a.Alert, url, prefix)
		case anchor != strings.ToLower(a.Alert):
			t.Errorf("%s: runbook_url anchor %q, want %q", a.Alert, anchor, strings.ToLower(a.Alert))
		case !anchors[anchor]:
			t.Errorf("%s: docs/operations.md has no section #%s", a.Alert, anchor)
		}
	}
}

// githubAnchor is the anchor GitHub gives a Markdown heading: lower case, spaces as dashes,
// punctuation other than dashes and underscores dropped.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// The rules pass Prometheus's own checker, and promtool's unit tests of them (rules_test.yaml:
// the unowned-slots alert fires for a replica that stopped, resolves once the others hold its
// slots, ignores a handover's moment and another namespace's ring).
func TestRulesPassPromtool(t *testing.T) {
	promtool := requireTool(t, "promtool")
	dir := t.TempDir()
	rules, err := monitoring.RuleFile()
	if err != nil {
		t.Fatal(err)
	}
	tests, err := monitoring.RuleTests()
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"rules.yaml": rules, "rules_test.yaml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "rules_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			continue
		}
		t.Logf("promtool %s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
	}
}

// requireTool returns the path of a tool of the tools directory (make tools), or skips the
// test without it.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(cluster.RequireTools(t), name)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no %s in $%s (%v): e2e/tools/prometheus.sh installs it", name, cluster.ToolsBinEnv, err)
	}
	return path
}
