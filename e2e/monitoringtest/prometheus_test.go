package monitoringtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ringfire/ringfire/deploy/monitoring"
	"github.com/ringfire/ringfire/e2e/procs"
	iprocs "github.com/ringfire/ringfire/internal/procs"
)

// prometheus is a Prometheus server run by a test: the pinned binary, on a free port of the
// loopback, scraping and evaluating every second, with ringfire's alerts loaded.
type prometheus struct {
	base string // http://127.0.0.1:port
	http *http.Client
	log  string
}

// target is a replica as Prometheus scrapes it, with the labels the Prometheus Operator would
// give it (the dashboard and the alerts select on namespace and pod).
type target struct {
	addr, pod string
}

// startPrometheus starts bin on a config that scrapes targets every second as job ringfire in
// namespace, with monitoring.RuleFile loaded and evaluated every second. It scrapes as
// deploy/monitoring's ServiceMonitor does: over HTTPS, not checking the replicas' self-signed
// certificates, with token as its bearer token. It stops with the test.
func startPrometheus(t *testing.T, bin, namespace, token string, targets []target) *prometheus {
	t.Helper()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	rules, err := monitoring.RuleFile()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	var static []any
	for _, tg := range targets {
		static = append(static, map[string]any{
			"targets": []string{tg.addr},
			"labels":  map[string]string{"namespace": namespace, "pod": tg.pod},
		})
	}
	config, err := yaml.Marshal(map[string]any{
		"global": map[string]any{
			"scrape_interval": "1s", "scrape_timeout": "900ms", "evaluation_interval": "1s",
		},
		"rule_files": []string{"rules.yaml"},
		"scrape_configs": []any{map[string]any{
			"job_name": "ringfire", "static_configs": static, "scheme": "https",
			"authorization": map[string]any{"type": "Bearer", "credentials_file": tokenFile},
			"tls_config":    map[string]any{"insecure_skip_verify": true},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), config, 0o644); err != nil {
		t.Fatal(err)
	}
	port, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	p := &prometheus{base: "http://" + addr, http: &http.Client{Timeout: 10 * time.Second}, log: filepath.Join(dir, "prometheus.log")}
	logFile, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
	)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logFile.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("prometheus log tail:\n%s", iprocs.Tail(p.log, 30))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		if resp, err := p.http.Get(p.base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("prometheus not ready after a minute; log:\n%s", iprocs.Tail(p.log, 30))
		case <-done:
			t.Fatalf("prometheus exited; log:\n%s", iprocs.Tail(p.log, 30))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// apiResponse is the envelope of Prometheus's HTTP API.
type apiResponse struct {
	Status    string          `json:"status"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Data      json.RawMessage `json:"data"`
}

// get calls the HTTP API at path with query parameters and decodes data into out.
func (p *prometheus) get(ctx context.Context, path string, params url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r apiResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("%s: HTTP %d: %w", path, resp.StatusCode, err)
	}
	if r.Status != "success" {
		return fmt.Errorf("%s: %s: %s", path, r.ErrorType, r.Error)
	}
	return json.Unmarshal(r.Data, out)
}

// sample is one series of an instant query's result.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query runs an instant PromQL query; an error means Prometheus refused it (a parse error
// among them).
func (p *prometheus) query(ctx context.Context, expr string) ([]sample, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("result type %s, want vector", data.ResultType)
	}
	var out []sample
	return out, json.Unmarshal(data.Result, &out)
}

// labelValues returns the values of label among the series that match.
func (p *prometheus) labelValues(ctx context.Context, label, match string) ([]string, error) {
	var out []string
	return out, p.get(ctx, "/api/v1/label/"+label+"/values", url.Values{"match[]": {match}}, &out)
}

// alert is one active alert of /api/v1/alerts.
type alert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"` // pending or firing
	ActiveAt time.Time         `json:"activeAt"`
}

// alertState returns the state of the active alert named name, or "" when none is active.
func (p *prometheus) alertState(ctx context.Context, name string) (string, error) {
	var data struct {
		Alerts []alert `json:"alerts"`
	}
	if err := p.get(ctx, "/api/v1/alerts", nil, &data); err != nil {
		return "", err
	}
	state := ""
	for _, a := range data.Alerts {
		if a.Labels["alertname"] == name && (state == "" || a.State == "firing") {
			state = a.State
		}
	}
	return state, nil
}

// waitAlert polls the alert named name until its state is want ("" for not active), or limit
// passes; it returns when it saw want.
func (p *prometheus) waitAlert(t *testing.T, name, want string, limit time.Duration) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	last := "never read"
	for {
		state, err := p.alertState(ctx, name)
		switch {
		case err != nil:
			last = err.Error()
		case state == want:
			return time.Now()
		default:
			last = fmt.Sprintf("state %q", state)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("alert %s not %q within %v; last: %s", name, want, limit, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
