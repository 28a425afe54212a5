package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ringfire/ringfire/deploy"
	"github.com/ringfire/ringfire/internal/replica"
)

// The ports: metrics and probes on their own addresses, profiles off unless
// asked for, and the old single-address flags gone.
func TestRunFlagsServePorts(t *testing.T) {
	var f runOptions
	fs := runFlagSet(&f)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if f.metricsAddr != ":8080" || f.healthAddr != ":8081" || f.pprofAddr != "" {
		t.Errorf("defaults: metrics %q, health %q, pprof %q; want :8080, :8081, off", f.metricsAddr, f.healthAddr, f.pprofAddr)
	}
	for _, old := range []string{"--listen=:8080", "--pprof"} {
		fs := runFlagSet(&runOptions{})
		fs.SetOutput(io.Discard)
		if err := fs.Parse([]string{old}); err == nil {
			t.Errorf("%s is still accepted", old)
		}
	}
}

// The StatefulSet of deploy/ringfire passes flags `ringfire run` knows.
func TestDeployedArgsParse(t *testing.T) {
	objs, err := deploy.Objects("ringfire")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, obj := range objs {
		if obj.GetKind() != "StatefulSet" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			args, _, _ := unstructured.NestedStringSlice(c.(map[string]any), "args")
			if len(args) == 0 || args[0] != "run" {
				continue
			}
			found = true
			var f runOptions
			if err := runFlagSet(&f).Parse(args[1:]); err != nil {
				t.Errorf("%s: %v", obj.GetName(), err)
			}
			if f.metricsAddr != ":8080" || f.healthAddr != ":8081" {
				t.Errorf("%s serves metrics on %q and probes on %q, want :8080 and :8081 (its container ports)", obj.GetName(), f.metricsAddr, f.healthAddr)
			}
			if !f.metricsSecure {
				t.Errorf("%s serves metrics without --metrics-secure: plain HTTP to anyone in the cluster", obj.GetName())
			}
		}
	}
	if !found {
		t.Fatal("no StatefulSet running `ringfire run` in deploy/ringfire")
	}
}

// --kube-api-content-type: protobuf unless asked for json; anything else is refused.
func TestRunFlagsContentType(t *testing.T) {
	var f runOptions
	if err := runFlagSet(&f).Parse(nil); err != nil {
		t.Fatal(err)
	}
	if f.kube.contentType != replica.ContentTypeProtobuf {
		t.Errorf("default --kube-api-content-type %q, want protobuf", f.kube.contentType)
	}
	for value, ok := range map[string]bool{"protobuf": true, "json": true, "yaml": false, "": false, "application/json": false} {
		var f runOptions
		if err := runFlagSet(&f).Parse([]string{"--kube-api-content-type", value}); err != nil {
			t.Fatal(err)
		}
		if err := f.kube.checkContentType(); (err == nil) != ok {
			t.Errorf("--kube-api-content-type %q: %v", value, err)
		}
	}
}

// The options are checked before anything starts, every mistake named, and
// checking them changes nothing.
func TestRunOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string // "" for valid
	}{
		{nil, ""},
		{[]string{"--controllers", "job,queue,podgroup,cronjob,jobflow,batchjob,scheduler"}, ""},
		{[]string{"--controllers", "job,queue,podgroup"}, ""},
		{[]string{"--controllers", "job,queue,podgroup,gc"}, `unknown controller "gc" (known: job, queue, podgroup, jobflow, cronjob, batchjob, scheduler)`},
		{[]string{"--controllers", "job,queue,podgroup,scheduler,scheduler"}, "scheduler named more than once"},
		{[]string{"--controllers", "job,queue,cronjob"}, "podgroup left out"},
		{[]string{"--controllers", "scheduler"}, "job, queue, podgroup left out"},
		{[]string{"--workers", "0"}, "--workers 0"},
		{[]string{"--lease-ttl", "0s"}, "--lease-ttl 0s"},
		{[]string{"--drain-timeout", "-1s"}, "--drain-timeout -1s"},
		{[]string{"--slots", "-2"}, "--slots -2"},
		{[]string{"--id", "a/b"}, `--id "a/b"`},
		{[]string{"--etcd-prefix", "ringfire"}, `--etcd-prefix "ringfire"`},
		{[]string{"--log-level", "loud"}, `--log-level "loud"`},
		{[]string{"--log-format", "xml"}, `--log-format "xml"`},
		{[]string{"--kube-api-content-type", "yaml"}, "--kube-api-content-type"},
		{[]string{"--scheduler-name", ""}, "--scheduler-name is empty"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var f runOptions
			fs := runFlagSet(&f)
			fs.SetOutput(io.Discard)
			if err := fs.Parse(append([]string{"--id", "r0"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			before := f
			err := f.Validate()
			if f != before {
				t.Errorf("Validate changed the options: %+v, was %+v", f, before)
			}
			if tc.err == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("Validate = %v, want an error with %q", err, tc.err)
			}
		})
	}
}

// run refuses bad options before it starts the embedded etcd: no data
// directory is made.
func TestRunValidatesBeforeEtcd(t *testing.T) {
	var f runOptions
	dir := filepath.Join(t.TempDir(), "data")
	if err := runFlagSet(&f).Parse([]string{"--id", "r0", "--data-dir", dir, "--controllers", "job,queue,cronjob"}); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), f, hclog.NewNullLogger())
	if err == nil || !strings.Contains(err.Error(), "--controllers") {
		t.Fatalf("run = %v, want the --controllers error", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the embedded etcd's data directory exists (%v): run started etcd before checking its options", err)
	}
}

// The flags' defaults are replica.DefaultConfig's, and what they describe
// is that config.
func TestRunFlagDefaults(t *testing.T) {
	var f runOptions
	if err := runFlagSet(&f).Parse([]string{"--id", "r0"}); err != nil {
		t.Fatal(err)
	}
	got := f.replicaConfig(nil, nil, nil, nil, nil)
	want := replica.DefaultConfig()
	want.ID, want.Logger = "r0", nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the flags' defaults make %+v, want replica.DefaultConfig %+v", got, want)
	}
	if strings.Join(got.Controllers, ",") != "job,queue,podgroup,jobflow,cronjob,batchjob" || got.Workers != 8 ||
		got.LeaseTTL != 5*time.Second || got.DrainTimeout != 5*time.Second || got.MaxRequeue != 15 {
		t.Errorf("defaults changed: %+v", got)
	}
}
