package metricstest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/e2e/standin"
	"github.com/ringfire/ringfire/e2e/vcjob"
	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/internal/promreg"
)

const (
	ns        = "default"
	slots     = 64
	shortJobs = 6
)

// Jobs run by two replicas show in their metrics, every name of the
// contract is there with its type and labels, and each Job is counted once
// across the replicas.
func TestRunningReplicasExposeTheContract(t *testing.T) {
	log := hclog.New(&hclog.LoggerOptions{Name: "metricstest", Level: hclog.Warn, Output: os.Stderr})
	cl := cluster.StartForTest(t, cluster.Options{Nodes: 2, Logger: log.Named("cluster")})
	_, vc := standin.StartForTest(t, cl, 200)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	ring := localetcd.StartForTest(t)
	args := procs.Args{
		Bin: procs.Build(t), Etcd: ring.Endpoint(), Prefix: "/metricstest", Kubeconfig: cl.Kubeconfig(),
		LogDir: t.TempDir(), Slots: slots, LeaseTTL: 3 * time.Second,
	}
	pprofPort, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	replicas := []*procs.Replica{
		procs.Start(t, args, "r0"),
		procs.StartOn(t, args, "r1", procs.Addrs{Pprof: net.JoinHostPort("127.0.0.1", strconv.Itoa(pprofPort))}),
	}
	defer func() {
		procs.StopAll(t, replicas)
		if t.Failed() {
			for _, r := range replicas {
				fmt.Fprintf(os.Stderr, "=== replica %s log tail:\n%s\n", r.ID, r.LogTail(40))
			}
		}
	}()
	if err := procs.WaitRing(ctx, replicas, time.Minute); err != nil {
		t.Fatal(err)
	}
	checkPorts(ctx, t, replicas)

	for i := range shortJobs {
		vcjob.Create(t, vc, vcjob.New(ns, fmt.Sprintf("short-%d", i), vcjob.Task("w", 1, "1s", "")))
	}
	long := vcjob.Create(t, vc, vcjob.New(ns, "long", vcjob.Task("w", 1, "10m", "")))
	waitPhases(ctx, t, vc, map[string]batch.JobPhase{"long": batch.Running})
	// While it runs, its PodGroup is counted and the age of the Running phase
	// grows (finished Jobs' PodGroups are deleted).
	running := waitMetrics(ctx, t, replicas, func(s []scrape) bool {
		return sum(s, "ringfire_podgroups", nil) >= 1 && sum(s, "ringfire_jobs", map[string]string{"phase": "Running"}) >= 1 &&
			sum(s, "ringfire_jobs_phase_age_seconds", map[string]string{"phase": "Running"}) > 0
	})
	for _, c := range []struct {
		metric string
		labels map[string]string
	}{
		{"ringfire_podgroups", nil},
		{"ringfire_jobs", map[string]string{"phase": "Running"}},
		{"ringfire_jobs_phase_age_seconds", map[string]string{"phase": "Running"}},
	} {
		if got := sum(running, c.metric, c.labels); got <= 0 {
			t.Errorf("while a Job runs, %s summed over the replicas: %v, want some", series(c.metric, c.labels), got)
		}
	}
	cmd := &bus.Command{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "abort-long"},
		Action:     string(bus.AbortJobAction),
		TargetObject: &metav1.OwnerReference{
			APIVersion: batch.SchemeGroupVersion.String(), Kind: "Job", Name: long.Name, UID: long.UID,
		},
	}
	if _, err := vc.BusV1alpha1().Commands(ns).Create(ctx, cmd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]batch.JobPhase{"long": batch.Aborted}
	for i := range shortJobs {
		want[fmt.Sprintf("short-%d", i)] = batch.Completed
	}
	waitPhases(ctx, t, vc, want)

	// The metrics of the last writes may trail the phases by a reconcile:
	// read them until the Job counts add up (or the wait ends), then check
	// everything on that scrape.
	scrapes := waitMetrics(ctx, t, replicas, func(s []scrape) bool {
		return sum(s, "ringfire_jobs", nil) == shortJobs+1 &&
			sum(s, "ringfire_job_completion_seconds", map[string]string{"phase": "Aborted"}) == 1 &&
			sum(s, "ringfire_job_completion_seconds", map[string]string{"phase": "Completed"}) == shortJobs
	})
	for _, s := range scrapes {
		checkContract(t, s)
	}
	for _, c := range []struct {
		metric string
		labels map[string]string
		want   float64
	}{
		// Each Job once, across the replicas.
		{"ringfire_jobs", map[string]string{"phase": "Completed", "queue": "default"}, shortJobs},
		{"ringfire_jobs", map[string]string{"phase": "Aborted", "queue": "default"}, 1},
		{"ringfire_job_running_seconds", nil, shortJobs + 1},
		{"ringfire_job_completion_seconds", map[string]string{"phase": "Completed"}, shortJobs},
		{"ringfire_job_completion_seconds", map[string]string{"phase": "Aborted"}, 1},
		{"ringfire_job_commands_taken_total", map[string]string{"action": "AbortJob"}, 1},
		// The ring, whole.
		{"ringfire_slots_owned", nil, slots},
		{"ringfire_slots_assigned", nil, slots},
		{"ringfire_ring_slots", nil, 2 * slots},
		{"ringfire_ready", nil, 2},
		{"ringfire_slots_orphaned", nil, 0},
	} {
		if got := sum(scrapes, c.metric, c.labels); got != c.want {
			t.Errorf("%s summed over the replicas: %v, want %v", series(c.metric, c.labels), got, c.want)
		}
	}
	for _, c := range []struct {
		metric string
		labels map[string]string
	}{
		{"workqueue_work_duration_seconds", map[string]string{"name": "job"}},
		{"workqueue_adds_total", map[string]string{"name": "job"}},
		{"rest_client_requests_total", map[string]string{"method": "PUT"}},
		{"rest_client_request_duration_seconds", map[string]string{"verb": "POST"}},
	} {
		if got := sum(scrapes, c.metric, c.labels); got <= 0 {
			t.Errorf("%s summed over the replicas: %v, want some", series(c.metric, c.labels), got)
		}
	}
}

// checkPorts checks that each server answers only its own paths, and that
// profiles are served only by the replica that asked for them.
func checkPorts(ctx context.Context, t *testing.T, replicas []*procs.Replica) {
	t.Helper()
	for _, r := range replicas {
		for _, c := range []struct {
			addr, path string
			code       int
		}{
			{r.Addrs.Health, "/readyz", 200},
			{r.Addrs.Health, "/healthz", 200},
			{r.Addrs.Health, "/metrics", 404},
			{r.Addrs.Metrics, "/metrics", 200},
			{r.Addrs.Metrics, "/status.json", 200},
			{r.Addrs.Metrics, "/readyz", 404},
			{r.Addrs.Metrics, "/debug/pprof/", 404},
		} {
			if code := status(ctx, t, c.addr, c.path); code != c.code {
				t.Errorf("replica %s: GET %s on %s: %d, want %d", r.ID, c.path, c.addr, code, c.code)
			}
		}
	}
	if _, code, err := replicas[1].Get(ctx, "/debug/pprof/"); err != nil || code != 200 {
		t.Errorf("replica r1 with --pprof-bind-address: /debug/pprof/ %d (%v), want 200", code, err)
	}
	if replicas[0].Addrs.Pprof != "" {
		t.Errorf("replica r0 serves profiles on %s, want none", replicas[0].Addrs.Pprof)
	}
}

// status GETs path on addr and returns the HTTP status.
func status(ctx context.Context, t *testing.T, addr, path string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s on %s: %v", path, addr, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitPhases waits until every named Job is in its phase.
func waitPhases(ctx context.Context, t *testing.T, vc vcclient.Interface, want map[string]batch.JobPhase) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var off []string
		for name, phase := range want {
			job, err := vc.BatchV1alpha1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				off = append(off, fmt.Sprintf("%s: %v", name, err))
			} else if job.Status.State.Phase != phase {
				off = append(off, fmt.Sprintf("%s %s (want %s)", name, job.Status.State.Phase, phase))
			}
		}
		if len(off) == 0 {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			slices.Sort(off)
			t.Fatalf("Jobs not in their phases after 2 minutes: %s", strings.Join(off, "; "))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitMetrics scrapes the replicas until ok holds of their scrapes, or for
// a minute, and returns the last scrapes: the caller checks them.
func waitMetrics(ctx context.Context, t *testing.T, replicas []*procs.Replica, ok func([]scrape) bool) []scrape {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		s := scrapeAll(ctx, t, replicas)
		if ok(s) || time.Now().After(deadline) || ctx.Err() != nil {
			return s
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// scrape is one replica's /metrics, parsed.
type scrape struct {
	replica  string
	families map[string]*dto.MetricFamily
}

func scrapeAll(ctx context.Context, t *testing.T, replicas []*procs.Replica) []scrape {
	t.Helper()
	var out []scrape
	for _, r := range replicas {
		body, code, err := r.Get(ctx, "/metrics")
		if err != nil || code != 200 {
			t.Fatalf("replica %s /metrics: %d %v", r.ID, code, err)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			t.Fatalf("replica %s /metrics does not parse: %v", r.ID, err)
		}
		out = append(out, scrape{replica: r.ID, families: families})
	}
	return out
}

// checkContract checks that every metric of the contract is in s, of its
// type, with at least one series, each with exactly the contract's labels.
// Jobs and PodGroups by phase may be missing from a replica whose slots hold
// none: sum checks them across the replicas.
func checkContract(t *testing.T, s scrape) {
	t.Helper()
	for _, m := range promreg.Contract {
		f, ok := s.families[m.Name]
		if !ok || len(f.GetMetric()) == 0 {
			// The certificates' expiry has series only with TLS to etcd, which this ring runs without.
			if m.Name != "ringfire_jobs" && m.Name != "ringfire_podgroups" && m.Name != "ringfire_certificate_expiry_timestamp_seconds" {
				t.Errorf("replica %s: no %s", s.replica, m.Name)
			}
			continue
		}
		if got := strings.ToLower(f.GetType().String()); got != m.Type {
			t.Errorf("replica %s: %s is a %s, want a %s", s.replica, m.Name, got, m.Type)
		}
		want := slices.Sorted(slices.Values(m.Labels))
		for _, series := range f.GetMetric() {
			var labels []string
			for _, l := range series.GetLabel() {
				labels = append(labels, l.GetName())
			}
			slices.Sort(labels)
			if !slices.Equal(labels, want) {
				t.Errorf("replica %s: %s has a series with labels %v, want %v", s.replica, m.Name, labels, want)
				break
			}
		}
	}
}

// sum adds up a metric over the scrapes and its series whose labels include
// labels: a counter's or gauge's value, a histogram's count.
func sum(scrapes []scrape, name string, labels map[string]string) float64 {
	total := 0.0
	for _, s := range scrapes {
		f, ok := s.families[name]
		if !ok {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				total += m.GetCounter().GetValue()
			case m.Gauge != nil:
				total += m.GetGauge().GetValue()
			case m.Histogram != nil:
				total += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return total
}

// series writes a metric and labels as PromQL would select them.
func series(name string, labels map[string]string) string {
	var pairs []string
	for k, v := range labels {
		pairs = append(pairs, fmt.Sprintf("%s=%q", k, v))
	}
	slices.Sort(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}
