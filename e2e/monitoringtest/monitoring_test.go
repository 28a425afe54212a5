// Package monitoringtest runs deploy/monitoring for real: a Prometheus of the pinned build
// (e2e/tools/prometheus.sh) scrapes three ringfire replicas on a real control plane under a
// light Job load, over HTTPS with a ServiceAccount's token as deploy/monitoring's ServiceMonitor
// does (the replicas run with --metrics-secure and review it with the API server), with the alerts of the PrometheusRule loaded. Every alert's expression and
// every dashboard query must parse and find the series it reads, and the unowned-slots alert
// must fire for a replica stopped past its lease and resolve once the others took its slots.
package monitoringtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ringfire/ringfire/deploy"
	"github.com/ringfire/ringfire/deploy/monitoring"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/e2e/standin"
	"github.com/ringfire/ringfire/e2e/vcjob"
	"github.com/ringfire/ringfire/internal/localetcd"
	iprocs "github.com/ringfire/ringfire/internal/procs"
)

const (
	ns    = "default"
	slots = 256
	// leaseTTL keeps the stopped replica's slots its own (held under its live lease, unowned
	// by any running replica) past the unowned-slots alert's `for` (30 s) and the scrape and
	// evaluation intervals. A replica renews its lease every third of the TTL, so the lease of
	// one stopped at a random moment lapses between 2/3 TTL (40 s) and the TTL after the stop.
	leaseTTL = 60 * time.Second
	stopped  = "r1"
	// unowned is the alert under test.
	unowned = "RingfireSlotsUnowned"
	// policyMissing fires once policyGone is deleted.
	policyMissing = "RingfireAdmissionPolicyMissing"
	policyGone    = "ringfire-queue-command"
)

// rateWindow stands for Grafana's $__rate_interval: ten samples of 1 s scrapes.
const rateWindow = "10s"

// mayBeEmpty are the dashboard panels that may show nothing in a healthy ring under a light
// load, and why.
var mayBeEmpty = map[string]string{
	"Conflicts (409)": "a light load may meet no conflicting write",
}

// absentHere are the series alerts read that this ring, run without TLS to its etcd, does not
// export, and where they are checked instead.
var absentHere = map[string]string{
	"ringfire_certificate_expiry_timestamp_seconds": "only with TLS to etcd; e2e/certtest scrapes it from replicas that have it",
}

func TestAlertsAndDashboardOnALiveRing(t *testing.T) {
	tools := cluster.RequireTools(t)
	promBin := filepath.Join(tools, "prometheus")
	if _, err := os.Stat(promBin); err != nil {
		t.Skipf("no prometheus in $%s (%v): e2e/tools/prometheus.sh (make tools) installs it", cluster.ToolsBinEnv, err)
	}
	bin := procs.Build(t)
	cl := cluster.StartForTest(t, cluster.Options{Nodes: 4})
	_, vc := standin.StartForTest(t, cl, 200)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	// The replicas serve their metrics as deployed (--metrics-secure); Prometheus and the test
	// read them with the token of a ServiceAccount bound to ringfire-metrics-reader.
	if err := deploy.InstallRBAC(ctx, cl.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	token := procs.MetricsToken(t, cl.RESTConfig(), deploy.Namespace, "prometheus", true)
	ring := localetcd.StartForTest(t)
	args := procs.Args{
		Bin: bin, Etcd: ring.Endpoint(), Prefix: "/monitoringtest", Kubeconfig: cl.Kubeconfig(),
		LogDir: t.TempDir(), Slots: slots, LeaseTTL: leaseTTL, MetricsSecure: true, MetricsToken: token,
	}
	var replicas []*procs.Replica
	t.Cleanup(func() {
		procs.StopAll(t, replicas) // continues the stopped one first
		if t.Failed() {
			for _, r := range replicas {
				t.Logf("replica %s log tail:\n%s", r.ID, r.LogTail(20))
			}
		}
	})
	var targets []target
	for i := range 3 {
		r := procs.Start(t, args, fmt.Sprintf("r%d", i))
		replicas = append(replicas, r)
		targets = append(targets, target{addr: r.Addrs.Metrics, pod: r.ID})
	}
	if err := procs.WaitRing(ctx, replicas, time.Minute); err != nil {
		t.Fatal(err)
	}
	prom := startPrometheus(t, promBin, deploy.Namespace, token, targets)
	start := time.Now()

	// A light load for the rest of the test: a Job of two 2-second pods every half second.
	loadCtx, stopLoad := context.WithCancel(ctx)
	var load sync.WaitGroup
	load.Add(1)
	created := 0
	go func() {
		defer load.Done()
		for i := 0; i < 400 && loadCtx.Err() == nil; i++ {
			job := vcjob.New(ns, fmt.Sprintf("load-%03d", i), vcjob.Task("worker", 2, "2s", ""))
			c, cancel := context.WithTimeout(loadCtx, 10*time.Second)
			if _, err := vc.BatchV1alpha1().Jobs(ns).Create(c, job, metav1.CreateOptions{}); err == nil {
				created++
			}
			cancel()
			select {
			case <-loadCtx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { stopLoad(); load.Wait() })

	// Until every replica is scraped and some Jobs have run and finished.
	waitFor(t, prom, "3 replicas up and Jobs finished", 2*time.Minute, func(ctx context.Context) (bool, error) {
		up, err := prom.query(ctx, `count(up{job="ringfire"} == 1) == 3`)
		if err != nil || len(up) == 0 {
			return false, err
		}
		done, err := prom.query(ctx, `sum(ringfire_job_completion_seconds_count) > 5`)
		return len(done) > 0, err
	})
	// And a rate window's worth of samples.
	time.Sleep(time.Until(start.Add(12 * time.Second)))

	qctx, qcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer qcancel()
	checkAlertQueries(t, qctx, prom)
	checkDashboardQueries(t, qctx, prom)
	if t.Failed() {
		return // the pause below would only add a minute to the failure
	}

	// Stop a replica past its lease: its series go stale at the next scrape, its slots count
	// as unowned, and the alert fires 30 s on; its lease lapses 40 to 60 s after the stop, the
	// others take its slots, and the alert resolves.
	var r *procs.Replica
	for _, x := range replicas {
		if x.ID == stopped {
			r = x
		}
	}
	if err := r.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	firing := prom.waitAlert(t, unowned, "firing", 2*time.Minute)
	t.Logf("%s firing %v after %s stopped", unowned, firing.Sub(stoppedAt).Round(100*time.Millisecond), stopped)
	resolved := prom.waitAlert(t, unowned, "", 2*time.Minute)
	t.Logf("%s resolved %v after the stop (lease TTL %v)", unowned, resolved.Sub(stoppedAt).Round(100*time.Millisecond), leaseTTL)
	if resolved.Sub(stoppedAt) < 2*leaseTTL/3-time.Second {
		t.Errorf("%s resolved %v after the stop, before the stopped replica's lease could lapse (%v)", unowned, resolved.Sub(stoppedAt), leaseTTL)
	}
	owned, err := prom.query(qctx, `sum(ringfire_slots_owned{job="ringfire"})`)
	if err != nil || len(owned) != 1 || owned[0].Value[1] != fmt.Sprint(slots) {
		t.Errorf("after the takeover the running replicas hold %v slots (%v), want %d", owned, err, slots)
	}
	if err := r.Signal(syscall.SIGCONT); err != nil {
		t.Error(err)
	}

	// An admission policy ringfire relies on deleted: every replica's check (at start and
	// every minute) finds it missing, and the alert fires for it.
	admin := kubernetes.NewForConfigOrDie(cl.RESTConfig())
	if err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(qctx, policyGone, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deletedAt := time.Now()
	firing = prom.waitAlert(t, policyMissing, "firing", 4*time.Minute)
	t.Logf("%s firing %v after %s was deleted", policyMissing, firing.Sub(deletedAt).Round(100*time.Millisecond), policyGone)
	missing, err := prom.query(qctx, `max by (policy) (ringfire_admission_policy_missing) > 0`)
	if err != nil || len(missing) != 1 || missing[0].Metric["policy"] != "ValidatingAdmissionPolicy/"+policyGone {
		t.Errorf("missing policies as the metric has them: %v (%v), want only ValidatingAdmissionPolicy/%s", missing, err, policyGone)
	}
	stopLoad()
	load.Wait()
	t.Logf("%d Jobs created over %v", created, time.Since(start).Round(time.Second))
}

// seriesName finds the metric names an expression reads.
var seriesName = regexp.MustCompile(`\b(?:ringfire|rest_client|workqueue|process)_[a-z_]+\b|\bup\b`)

// checkAlertQueries queries every alert's expression (it must parse; in a healthy ring most
// return nothing, which is the point) and every series it reads (each must have data, or the
// alert could never fire).
func checkAlertQueries(t *testing.T, ctx context.Context, prom *prometheus) {
	alerts, err := monitoring.Alerts()
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]bool{}
	for _, a := range alerts {
		if _, err := prom.query(ctx, a.Expr); err != nil {
			t.Errorf("alert %s: %v", a.Alert, err)
		}
		for _, name := range seriesName.FindAllString(a.Expr, -1) {
			if checked[name] {
				continue
			}
			checked[name] = true
			got, err := prom.query(ctx, fmt.Sprintf(`count({__name__=%q, job="ringfire"})`, name))
			switch {
			case err != nil:
				t.Errorf("alert %s, series %s: %v", a.Alert, name, err)
			case len(got) == 0 && absentHere[name] == "":
				t.Errorf("alert %s reads %s, which no replica exports", a.Alert, name)
			case len(got) == 0:
				t.Logf("alert %s reads %s, absent here: %s", a.Alert, name, absentHere[name])
			}
		}
	}
	t.Logf("%d alert expressions parsed; of the %d series they read, all but %d have data", len(alerts), len(checked), len(absentHere))
}

// checkDashboardQueries runs every panel's queries with the dashboard's variables set as
// Grafana would set them for this ring (every replica selected): each must parse, and each
// panel must show something, but for those of mayBeEmpty. The variables' own queries must
// find the namespace and the three replicas.
func checkDashboardQueries(t *testing.T, ctx context.Context, prom *prometheus) {
	d, err := monitoring.LoadDashboard()
	if err != nil {
		t.Fatal(err)
	}
	pods, err := prom.labelValues(ctx, "pod", fmt.Sprintf(`ringfire_build_info{namespace=%q}`, deploy.Namespace))
	if err != nil || !slices.Equal(pods, []string{"r0", "r1", "r2"}) {
		t.Errorf("the pod variable's values %v (%v), want r0, r1, r2", pods, err)
	}
	vars := map[string]string{"namespace": deploy.Namespace, "pod": ".*", "__rate_interval": rateWindow, "__interval": "1s"}
	var empty []string
	queries := 0
	for _, p := range d.AllPanels() {
		shows := false
		for _, tg := range p.Targets {
			expr := monitoring.Substitute(tg.Expr, vars)
			got, err := prom.query(ctx, expr)
			queries++
			if err != nil {
				t.Errorf("panel %q query %s: %v\n%s", p.Title, tg.RefID, err, expr)
			}
			shows = shows || len(got) > 0
		}
		if !shows {
			empty = append(empty, p.Title)
			if mayBeEmpty[p.Title] == "" {
				t.Errorf("panel %q shows nothing in a healthy busy ring: %v", p.Title, p.Targets)
			}
		}
	}
	t.Logf("%d dashboard queries of %d panels parsed; empty (allowed): %v", queries, len(d.AllPanels()), empty)
}

// waitFor polls cond once a second until it holds or limit passes.
func waitFor(t *testing.T, prom *prometheus, what string, limit time.Duration, cond func(context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("not %s within %v (last error: %v); prometheus log tail:\n%s", what, limit, last, iprocs.Tail(prom.log, 20))
		case <-time.After(time.Second):
		}
	}
}
