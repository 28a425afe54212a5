package main

import (
	"io"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ringfire/ringfire/deploy"
	"github.com/ringfire/ringfire/internal/replica"
)

// The ports: metrics and probes on their own addresses, profiles off unless
// asked for, and the old single-address flags gone.
func TestRunFlagsServePorts(t *testing.T) {
	var f runFlags
	fs := runFlagSet(&f)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if f.metricsAddr != ":8080" || f.healthAddr != ":8081" || f.pprofAddr != "" {
		t.Errorf("defaults: metrics %q, health %q, pprof %q; want :8080, :8081, off", f.metricsAddr, f.healthAddr, f.pprofAddr)
	}
	for _, old := range []string{"--listen=:8080", "--pprof"} {
		fs := runFlagSet(&runFlags{})
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
			var f runFlags
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
	var f runFlags
	if err := runFlagSet(&f).Parse(nil); err != nil {
		t.Fatal(err)
	}
	if f.kube.contentType != replica.ContentTypeProtobuf {
		t.Errorf("default --kube-api-content-type %q, want protobuf", f.kube.contentType)
	}
	for value, ok := range map[string]bool{"protobuf": true, "json": true, "yaml": false, "": false, "application/json": false} {
		var f runFlags
		if err := runFlagSet(&f).Parse([]string{"--kube-api-content-type", value}); err != nil {
			t.Fatal(err)
		}
		if err := f.kube.checkContentType(); (err == nil) != ok {
			t.Errorf("--kube-api-content-type %q: %v", value, err)
		}
	}
}
