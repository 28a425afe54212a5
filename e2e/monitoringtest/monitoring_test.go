package monitoringtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/deploy/monitoring"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/e2e/stack"
)

// variables are the values the test gives the dashboard's template
// variables, as Grafana would with every replica selected. The rate window
// covers five 1 s scrapes.
var variables = map[string]string{
	"job": scrapeJob, "pod": ".*", "__rate_interval": "5s", "__interval": "1s", "__range": "1m",
}

// allowedEmpty are the dashboard queries that may show nothing in a
// healthy run, and why. Their metrics are checked all the same.
var allowedEmpty = map[string]string{
	`"etcd keep-alive failures"/A`: "no keep-alive fails",
	`"Queues"/B`:                   "a Queue changes state only when created or commanded",
	`"Queues"/C`:                   "no Queue Command is sent",
	`"CronJob Jobs"/C`:             "no schedule time is missed",
	`"CronJob start delay"/A`:      "the CronJob starts a Job only if a minute begins during the test",
	`"CronJob start delay"/B`:      "the CronJob starts a Job only if a minute begins during the test",
	`"Scheduler binds"/B`:          "no bind fails",
	`"Scheduler binds"/C`:          "no PodGroup status write fails",
}

// TestDashboardAndRulesOnPrometheus runs a real Prometheus against three
// ringfire replicas doing real work, and checks the monitoring manifests
// against it: every dashboard query is valid and shows data, every metric
// a query or rule names is one the replicas export, every rule loads and
// evaluates, nothing fires in a healthy ring, and killing a replica raises
// the alerts for it.
func TestDashboardAndRulesOnPrometheus(t *testing.T) {
	tools := cluster.RequireTools(t)
	promBin := filepath.Join(tools, "prometheus")
	if _, err := os.Stat(promBin); err != nil {
		t.Fatalf("no Prometheus among the tools (%v): rebuild them with e2e/tools/build.sh", err)
	}
	dashboard, err := monitoring.LoadDashboard()
	if err != nil {
		t.Fatal(err)
	}
	rules, err := monitoring.Rules()
	if err != nil {
		t.Fatal(err)
	}
	plainRules, err := monitoring.RuleFile()
	if err != nil {
		t.Fatal(err)
	}

	// r0 alone first, scraped before r1 and r2 join, so that the run has
	// slot releases (r0's) to show; acquisitions follow the kill at the end.
	w := startWorld(t, procs.Build(t))
	w.start(t, "r0")
	dir := t.TempDir()
	start := time.Now()
	prom := startPrometheus(t, promBin, dir, w.targets(), ruleFile(t, dir, plainRules))
	w.start(t, "r1", "r2")
	prom.scrape(t, w.targets())

	jobs := w.submit(t, 8)
	ctx := context.Background()
	stack.WaitFor(t, "every Job is Completed", 2*time.Minute, func() (bool, string) {
		phases, err := w.phases(ctx, jobs)
		if err != nil {
			return false, err.Error()
		}
		return phases[batch.Completed] == len(jobs), fmt.Sprint(phases)
	})
	// Prometheus has scraped the finished work once it counts every Job's
	// move to Completed.
	completed := fmt.Sprintf(`sum(ringfire_job_phase_transitions_total{job=%q, phase="Completed"}) >= %d`, scrapeJob, len(jobs))
	stack.WaitFor(t, "Prometheus has scraped every Job's completion", 30*time.Second, func() (bool, string) {
		res, err := prom.query(ctx, completed)
		return err == nil && len(res) == 1, fmt.Sprint(res, err)
	})
	names := newNameCheck(t, w.exposition(t))

	t.Run("rules", func(t *testing.T) { checkRules(t, prom, names, rules) })
	t.Run("healthy ring fires nothing", func(t *testing.T) {
		stack.WaitFor(t, "no alert is pending or firing", 30*time.Second, func() (bool, string) {
			alerts, err := prom.alerts(ctx)
			return err == nil && len(alerts) == 0, fmt.Sprint(alerts, err)
		})
	})
	t.Run("killed replica raises alerts", func(t *testing.T) {
		victim := w.replicas[len(w.replicas)-1]
		killed := time.Now()
		if err := victim.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// Down at the first failed scrape; missing from the ring once its
		// lease (5 s) expires. Both wait out their `for` as pending.
		want := map[string]string{"RingfireReplicaDown": victim.ID, "RingfireMembersMissing": ""}
		stack.WaitFor(t, "the alerts for a killed replica are pending or firing", 45*time.Second, func() (bool, string) {
			alerts, err := prom.alerts(ctx)
			if err != nil {
				return false, err.Error()
			}
			found := 0
			for _, a := range alerts {
				if pod, ok := want[a.Labels["alertname"]]; ok && a.Labels["pod"] == pod {
					found++
				}
			}
			return found == len(want), fmt.Sprint(alerts)
		})
		t.Logf("alerts for the killed replica %s pending %v after SIGKILL", victim.ID, time.Since(killed).Round(100*time.Millisecond))
		// The survivors take the dead replica's slots over: acquisitions
		// for the dashboard's handover panels.
		survivors := w.replicas[:len(w.replicas)-1]
		if err := procs.WaitRing(ctx, survivors, time.Minute); err != nil {
			t.Fatal(err)
		}
		held := fmt.Sprintf(`sum(ringfire_slots_owned{job=%q}) == %d`, scrapeJob, slots)
		stack.WaitFor(t, "Prometheus has scraped the survivors holding every slot", 30*time.Second, func() (bool, string) {
			res, err := prom.query(ctx, held)
			return err == nil && len(res) == 1, fmt.Sprint(res, err)
		})
	})
	// Last, over the whole run: the load, the join, the kill.
	t.Run("dashboard", func(t *testing.T) { checkDashboard(t, prom, names, dashboard, start) })
}

// checkDashboard runs every panel query over the test's run and every
// template variable's query.
func checkDashboard(t *testing.T, prom *prometheus, names *nameCheck, d monitoring.Dashboard, start time.Time) {
	ctx := context.Background()
	end := time.Now()
	// How well Prometheus kept up, for the log: scrapes and their longest
	// duration per replica.
	window := fmt.Sprintf("%ds", int(end.Sub(start).Seconds())+1)
	for _, expr := range []string{
		fmt.Sprintf(`count_over_time(up{job=%q}[%s])`, scrapeJob, window),
		fmt.Sprintf(`max_over_time(scrape_duration_seconds{job=%q}[%s])`, scrapeJob, window),
	} {
		res, err := prom.query(ctx, expr)
		var per []string
		for _, s := range res {
			per = append(per, fmt.Sprintf("%s %v", s.Metric["pod"], s.Value[1]))
		}
		t.Logf("%s: %s %v", expr, strings.Join(per, ", "), err)
	}
	queries := d.Queries()
	seen := map[string]bool{}
	for _, q := range queries {
		seen[q.String()] = true
		expr, err := monitoring.Expand(q.Expr, variables)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		names.check(t, prom, q.String(), expr)
		res, err := prom.queryRange(ctx, expr, start, end, time.Second)
		if err != nil {
			t.Errorf("%s: %v\n\t%s", q, err, expr)
			continue
		}
		shows := slices.ContainsFunc(res, series.hasNumber)
		reason, mayBeEmpty := allowedEmpty[q.String()]
		switch {
		case !shows && !mayBeEmpty:
			t.Errorf("%s shows no data over the run (%d series, all NaN or none):\n\t%s", q, len(res), expr)
		case shows && mayBeEmpty:
			t.Logf("%s shows data this time (it may be empty: %s)", q, reason)
		}
	}
	for key := range allowedEmpty {
		if !seen[key] {
			t.Errorf("allowedEmpty names %s, which the dashboard does not have", key)
		}
	}
	t.Logf("%d dashboard queries valid and shown over %v of data", len(queries), end.Sub(start).Round(time.Second))

	want := map[string][]string{"job": {scrapeJob}, "pod": {"r0", "r1", "r2"}}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		match, label, err := labelValuesQuery(v.QueryText())
		if err == nil {
			match, err = monitoring.Expand(match, variables)
		}
		if err != nil {
			t.Errorf("variable %s: %v", v.Name, err)
			continue
		}
		names.check(t, prom, "variable "+v.Name, match)
		values, err := prom.labelValues(ctx, label, match)
		if err != nil || len(values) == 0 {
			t.Errorf("variable %s: label_values(%s, %s) = %v, %v; want values", v.Name, match, label, values, err)
			continue
		}
		for _, w := range want[v.Name] {
			if !slices.Contains(values, w) {
				t.Errorf("variable %s offers %v, without %s", v.Name, values, w)
			}
		}
	}
}

// labelValuesPattern is Grafana's label_values(selector, label).
var labelValuesPattern = regexp.MustCompile(`^\s*label_values\((.+),\s*(\w+)\s*\)\s*$`)

func labelValuesQuery(q string) (match, label string, err error) {
	m := labelValuesPattern.FindStringSubmatch(q)
	if m == nil {
		return "", "", fmt.Errorf("query %q is not label_values(selector, label)", q)
	}
	return m[1], m[2], nil
}

// checkRules checks that Prometheus loaded every alert of rules.yaml and
// evaluates each without error.
func checkRules(t *testing.T, prom *prometheus, names *nameCheck, pr monitoring.PrometheusRule) {
	ctx := context.Background()
	var want []string
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			want = append(want, r.Alert)
			names.check(t, prom, "alert "+r.Alert, r.Expr)
		}
	}
	var loaded []ruleState
	stack.WaitFor(t, "Prometheus has evaluated every rule", 30*time.Second, func() (bool, string) {
		var err error
		if loaded, err = prom.rules(ctx); err != nil {
			return false, err.Error()
		}
		var got, unknown []string
		for _, r := range loaded {
			got = append(got, r.Name)
			if r.Health == "unknown" {
				unknown = append(unknown, r.Name)
			}
		}
		slices.Sort(got)
		sorted := slices.Sorted(slices.Values(want))
		return slices.Equal(got, sorted) && len(unknown) == 0,
			fmt.Sprintf("loaded %v, not yet evaluated %v", got, unknown)
	})
	for _, r := range loaded {
		if r.Type != "alerting" || r.Health != "ok" || r.LastError != "" {
			t.Errorf("rule %s: type %s, health %s, error %q", r.Name, r.Type, r.Health, r.LastError)
		}
	}
	t.Logf("%d alerts loaded and evaluated", len(loaded))
}

// nameCheck tells whether a metric name is one the replicas export.
type nameCheck struct {
	exported map[string]bool
	source   string // ringfire's Go sources, read on first need
	root     string
}

func newNameCheck(t *testing.T, expositions map[string]string) *nameCheck {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return &nameCheck{exported: sampleNames(expositions), root: root}
}

// check fails the test for each metric expr names that no replica exports.
// A metric with no series yet (a vector by reason, before its first event)
// passes if its name is a string in ringfire's sources, so a renamed or
// removed metric fails either way.
func (n *nameCheck) check(t *testing.T, prom *prometheus, what, expr string) {
	t.Helper()
	used, err := prom.metricNames(context.Background(), expr)
	if err != nil {
		t.Errorf("%s: parse: %v", what, err)
		return
	}
	for _, name := range used {
		if n.exported[name] || prometheusOwn[name] {
			continue
		}
		if n.source == "" {
			if n.source, err = sourceLiterals(n.root); err != nil {
				t.Fatal(err)
			}
		}
		if !strings.Contains(n.source, `"`+familyOf(name)+`"`) {
			t.Errorf("%s uses %s, which the replicas do not export (not in /metrics, nor a name in ringfire's sources)", what, name)
			continue
		}
		t.Logf("%s uses %s: no series yet, defined in ringfire's sources", what, name)
	}
}
