package monitoringtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/e2e/stack"
)

// target is one replica as the ServiceMonitor would present it to
// Prometheus: its address and the labels the operator adds.
type target struct {
	addr, pod string
}

// prometheus is a Prometheus server process on loopback, scraping the
// replicas every second and evaluating the rule file every second.
type prometheus struct {
	url        string
	configPath string
	ruleFile   string
	logPath    string
	cmd        *exec.Cmd
	done       chan struct{}
	http       *http.Client
}

// scrapeJob is the job name the ServiceMonitor gives the replicas (its
// jobLabel is the Service's app.kubernetes.io/name, ringfire).
const scrapeJob = "ringfire"

// namespace is the namespace deploy/ puts ringfire in.
const namespace = "ringfire-system"

// startPrometheus starts bin with a configuration scraping targets and
// loading ruleFile, and returns once it is ready. It stops with the test.
func startPrometheus(t *testing.T, bin, dir string, targets []target, ruleFile string) *prometheus {
	t.Helper()
	configPath := filepath.Join(dir, "prometheus.yml")
	p := &prometheus{
		configPath: configPath, ruleFile: ruleFile, logPath: filepath.Join(dir, "prometheus.log"),
		done: make(chan struct{}), http: &http.Client{Timeout: 10 * time.Second},
	}
	if err := p.writeConfig(targets); err != nil {
		t.Fatal(err)
	}
	port, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	p.url = "http://" + addr
	logFile, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin,
		"--config.file="+configPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
	)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start prometheus: %v", err)
	}
	go func() {
		_ = p.cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() { // to stderr, ahead of the failures (see cluster.StartForTest)
			fmt.Fprintf(os.Stderr, "=== %s failed: prometheus log tail:\n%s\n", t.Name(), procs.Tail(p.logPath, 30))
		}
	})
	stack.WaitFor(t, "prometheus is ready", time.Minute, func() (bool, string) {
		select {
		case <-p.done:
			t.Fatalf("prometheus exited: %s", procs.Tail(p.logPath, 20))
		default:
		}
		resp, err := p.http.Get(p.url + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	p.waitScraped(t, targets)
	return p
}

// writeConfig writes a configuration that scrapes targets every second, as
// the ServiceMonitor would present them, and evaluates the rules every
// second.
func (p *prometheus) writeConfig(targets []target) error {
	var static strings.Builder
	for _, tg := range targets {
		fmt.Fprintf(&static, "      - targets: [%q]\n        labels: {pod: %q, namespace: %q}\n", tg.addr, tg.pod, namespace)
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: %s
    static_configs:
%s`, p.ruleFile, scrapeJob, static.String())
	return os.WriteFile(p.configPath, []byte(config), 0o644)
}

// scrape makes Prometheus scrape targets from now on (a configuration
// reload on SIGHUP) and returns once it has scraped each of them twice, so
// that a rate over them has two samples. Prometheus hands new targets to
// its scrapers in batches every 5 s.
func (p *prometheus) scrape(t *testing.T, targets []target) {
	t.Helper()
	if err := p.writeConfig(targets); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitScraped(t, targets)
}

// waitScraped waits until Prometheus has scraped each target twice within
// the last minute.
func (p *prometheus) waitScraped(t *testing.T, targets []target) {
	t.Helper()
	expr := fmt.Sprintf(`count_over_time(up{job=%q}[1m]) >= 2`, scrapeJob)
	stack.WaitFor(t, "Prometheus scrapes every replica", 30*time.Second, func() (bool, string) {
		res, err := p.query(context.Background(), expr)
		if err != nil {
			return false, err.Error()
		}
		scraped := map[string]bool{}
		for _, s := range res {
			scraped[s.Metric["pod"]] = true
		}
		for _, tg := range targets {
			if !scraped[tg.pod] {
				return false, fmt.Sprintf("%s not scraped twice yet (%v)", tg.pod, res)
			}
		}
		return true, ""
	})
}

// stop sends SIGTERM, and SIGKILL after 10 s.
func (p *prometheus) stop(t *testing.T) {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Errorf("prometheus ignored SIGTERM for 10s; killing it")
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// errQuery is an error Prometheus returned for a request: a bad expression
// and the like, as opposed to failing to reach it.
var errQuery = errors.New("prometheus refused the request")

// get calls an API endpoint and decodes its data into out.
func (p *prometheus) get(ctx context.Context, path string, params url.Values, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var envelope struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Warnings  []string        `json:"warnings"`
		Infos     []string        `json:"infos"`
	}
	if err := json.Unmarshal(body, &envelope); err != nil {
		return fmt.Errorf("%s: HTTP %d, %w: %.200s", path, resp.StatusCode, err, body)
	}
	if envelope.Status != "success" {
		return fmt.Errorf("%w: %s: %s", errQuery, envelope.ErrorType, envelope.Error)
	}
	// PromQL's warnings and infos flag queries that run but mean little,
	// such as rate() over a gauge or a histogram without le.
	if len(envelope.Warnings)+len(envelope.Infos) > 0 {
		return fmt.Errorf("%w: warnings %q, infos %q", errQuery, envelope.Warnings, envelope.Infos)
	}
	return json.Unmarshal(envelope.Data, out)
}

// series is one series of a range query's matrix.
type series struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"` // [unix seconds, "value"]
}

// hasNumber reports whether any of the series' values is a number (not NaN).
func (s series) hasNumber() bool {
	for _, v := range s.Values {
		if str, ok := v[1].(string); ok && str != "NaN" {
			return true
		}
	}
	return false
}

// queryRange evaluates expr from start to end every step.
func (p *prometheus) queryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]series, error) {
	var data struct {
		ResultType string   `json:"resultType"`
		Result     []series `json:"result"`
	}
	err := p.get(ctx, "/api/v1/query_range", url.Values{
		"query": {expr},
		"start": {strconv.FormatInt(start.Unix(), 10)},
		"end":   {strconv.FormatInt(end.Unix(), 10)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}, &data)
	return data.Result, err
}

// sample is one element of an instant query's vector.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query evaluates expr now.
func (p *prometheus) query(ctx context.Context, expr string) ([]sample, error) {
	var data struct {
		ResultType string   `json:"resultType"`
		Result     []sample `json:"result"`
	}
	err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &data)
	if err == nil && data.ResultType != "vector" {
		err = fmt.Errorf("%q gives a %s, not a vector", expr, data.ResultType)
	}
	return data.Result, err
}

// metricNames returns the metric names expr selects, by Prometheus' own
// parser (/api/v1/parse_query).
func (p *prometheus) metricNames(ctx context.Context, expr string) ([]string, error) {
	var ast any
	if err := p.get(ctx, "/api/v1/parse_query", url.Values{"query": {expr}}, &ast); err != nil {
		return nil, err
	}
	var names []string
	var walk func(any) error
	walk = func(node any) error {
		switch n := node.(type) {
		case map[string]any:
			if typ := n["type"]; typ == "vectorSelector" || typ == "matrixSelector" {
				name, _ := n["name"].(string)
				if name == "" {
					return fmt.Errorf("%q selects series without naming their metric", expr)
				}
				names = append(names, name)
			}
			for _, v := range n {
				if err := walk(v); err != nil {
					return err
				}
			}
		case []any:
			for _, v := range n {
				if err := walk(v); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return names, walk(ast)
}

// labelValues returns the values of label on the series match selects, as
// Grafana's label_values(match, label) asks for them.
func (p *prometheus) labelValues(ctx context.Context, label, match string) ([]string, error) {
	var values []string
	err := p.get(ctx, "/api/v1/label/"+label+"/values", url.Values{"match[]": {match}}, &values)
	return values, err
}

// ruleState is an alerting rule as /api/v1/rules reports it.
type ruleState struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
	State     string `json:"state"`
}

// rules returns every loaded rule.
func (p *prometheus) rules(ctx context.Context) ([]ruleState, error) {
	var data struct {
		Groups []struct {
			Name  string      `json:"name"`
			Rules []ruleState `json:"rules"`
		} `json:"groups"`
	}
	if err := p.get(ctx, "/api/v1/rules", nil, &data); err != nil {
		return nil, err
	}
	var out []ruleState
	for _, g := range data.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

// alert is an active (pending or firing) alert.
type alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
	Value  string            `json:"value"`
}

func (a alert) String() string {
	return fmt.Sprintf("%s %s (pod %q, value %s)", a.Labels["alertname"], a.State, a.Labels["pod"], a.Value)
}

// alerts returns the active alerts.
func (p *prometheus) alerts(ctx context.Context) ([]alert, error) {
	var data struct {
		Alerts []alert `json:"alerts"`
	}
	err := p.get(ctx, "/api/v1/alerts", nil, &data)
	return data.Alerts, err
}
