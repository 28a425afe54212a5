package replica

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/ringfire/ringfire/internal/localetcd"
)

// Every controller of the table has a name of its own; the defaults are
// today's: everything but the gang scheduler.
func TestControllerTable(t *testing.T) {
	known := KnownControllers()
	if want := []string{"job", "queue", "podgroup", "jobflow", "cronjob", "batchjob", "scheduler"}; !slices.Equal(known, want) {
		t.Errorf("KnownControllers = %v, want %v", known, want)
	}
	if got, want := DefaultControllers(), []string{"job", "queue", "podgroup", "jobflow", "cronjob", "batchjob"}; !slices.Equal(got, want) {
		t.Errorf("DefaultControllers = %v, want %v", got, want)
	}
	for _, c := range controllerTable {
		if c.build == nil {
			t.Errorf("%s has no constructor", c.name)
		}
		if c.required && !c.byDefault {
			t.Errorf("%s is required but not on by default", c.name)
		}
	}
}

func TestValidateControllers(t *testing.T) {
	for _, tc := range []struct {
		list string
		err  string // "" for valid
	}{
		{"job,queue,podgroup,cronjob,jobflow,batchjob", ""},
		{"job,queue,podgroup", ""},
		{" job , queue,podgroup,scheduler,", ""},
		{"podgroup,queue,job,jobflow", ""},
		{"job,queue,podgroup,cron", `unknown controller "cron" (known: job, queue, podgroup, jobflow, cronjob, batchjob, scheduler)`},
		{"job,queue,podgroup,job-controller,x", `unknown controller "job-controller", "x"`},
		{"job,queue,podgroup,cronjob,cronjob", "cronjob named more than once"},
		{"cronjob,jobflow", "job, queue, podgroup left out"},
		{"job,queue,cronjob", "podgroup left out"},
		{"", "job, queue, podgroup left out"},
	} {
		t.Run(tc.list, func(t *testing.T) {
			err := ValidateControllers(ParseControllers(tc.list))
			if tc.err == "" {
				if err != nil {
					t.Fatalf("ValidateControllers: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("ValidateControllers = %v, want an error with %q", err, tc.err)
			}
		})
	}
}

// Config.Validate says what is wrong and changes nothing.
func TestConfigValidate(t *testing.T) {
	for name, change := range map[string]func(*Config){
		"valid":                  func(*Config) {},
		"valid (forever)":        func(c *Config) { c.MaxRequeue = -1 },
		"valid (no retry)":       func(c *Config) { c.MaxRequeue = 0 },
		"valid (scheduler)":      func(c *Config) { c.Controllers = append(c.Controllers, SchedulerController) },
		"no id":                  func(c *Config) { c.ID = "" },
		"no etcd":                func(c *Config) { c.Etcd = nil },
		"no workers":             func(c *Config) { c.Workers = 0 },
		"max requeue below -1":   func(c *Config) { c.MaxRequeue = -2 },
		"no lease TTL":           func(c *Config) { c.LeaseTTL = 0 },
		"no drain timeout":       func(c *Config) { c.DrainTimeout = 0 },
		"no content type":        func(c *Config) { c.KubeContentType = "" },
		"no scheduler name":      func(c *Config) { c.SchedulerName = "" },
		"no controllers":         func(c *Config) { c.Controllers = nil },
		"job left out":           func(c *Config) { c.Controllers = []string{"queue", "podgroup"} },
		"unknown controller":     func(c *Config) { c.Controllers = append(c.Controllers, "hypernode") },
		"no logger":              func(c *Config) { c.Logger = nil },
		"negative slots":         func(c *Config) { c.Slots = -1 },
		"valid (short lease)":    func(c *Config) { c.LeaseTTL = 500 * time.Millisecond },
		"valid (ring of 64)":     func(c *Config) { c.Slots = 64 },
		"valid (json, 1 worker)": func(c *Config) { c.KubeContentType, c.Workers = ContentTypeJSON, 1 },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.ID, cfg.Etcd = "r0", &clientv3.Client{}
			change(&cfg)
			before := cfg
			before.Controllers = slices.Clone(cfg.Controllers)
			err := cfg.Validate()
			if valid := strings.HasPrefix(name, "valid"); (err == nil) != valid {
				t.Errorf("Validate = %v, want valid %v", err, valid)
			}
			if !reflect.DeepEqual(before, cfg) {
				t.Errorf("Validate changed the config: %+v, was %+v", cfg, before)
			}
		})
	}
}

// New builds the controllers Config.Controllers names and no others, and
// leaves out, with a warning, one whose CRDs the API server lacks.
func TestNewHonoursTheTable(t *testing.T) {
	// The API server serves Volcano's batch group with CronJobs, and no
	// flow group: the JobFlow controllers must turn themselves off.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/batch.volcano.sh/v1alpha1" {
			http.NotFound(w, r)
			return
		}
		list := metav1.APIResourceList{GroupVersion: "batch.volcano.sh/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "jobs", Namespaced: true, Kind: "Job"}, {Name: "cronjobs", Namespaced: true, Kind: "CronJob"},
		}}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	}))
	defer api.Close()
	etcd := localetcd.StartForTest(t)
	client := localetcd.ClientForTest(t, etcd.Endpoint())
	for i, tc := range []struct {
		controllers []string
		running     []string
	}{
		{DefaultControllers(), []string{"job", "queue", "podgroup", "cronjob", "batchjob"}},
		{[]string{"job", "queue", "podgroup"}, []string{"job", "queue", "podgroup"}},
		{[]string{"scheduler", "podgroup", "queue", "job", "jobflow"}, []string{"job", "queue", "podgroup", "scheduler"}},
	} {
		t.Run(strings.Join(tc.controllers, ","), func(t *testing.T) {
			var logs strings.Builder
			cfg := DefaultConfig()
			cfg.ID, cfg.Etcd, cfg.Prefix, cfg.LeaseTTL = "r0", client, "/table-"+string(rune('a'+i)), 2*time.Second
			cfg.Kube, cfg.Controllers = &rest.Config{Host: api.URL}, tc.controllers
			cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})
			r, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.Running, tc.running) {
				t.Errorf("running %v, want %v", r.Running, tc.running)
			}
			built := map[string]bool{
				"job": r.Jobs != nil, "queue": r.Queues != nil, "podgroup": r.PodGroups != nil, "cronjob": r.CronJobs != nil,
				"jobflow": r.JobFlows != nil && r.Templates != nil, "batchjob": r.BatchJobs != nil, "scheduler": r.Scheduler != nil,
			}
			for name, ok := range built {
				if want := slices.Contains(tc.running, name); ok != want {
					t.Errorf("%s built: %v, want %v", name, ok, want)
				}
			}
			if asked := slices.Contains(tc.controllers, "jobflow"); asked != strings.Contains(logs.String(), "jobflow controller: it is off") {
				t.Errorf("asked for jobflow %v, but the warning log is %q", asked, logs.String())
			}
			if len(r.run) < len(tc.running) {
				t.Errorf("%d goroutines to start for %d controllers", len(r.run), len(tc.running))
			}
		})
	}
}
