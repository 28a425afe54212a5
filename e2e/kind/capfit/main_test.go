package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestSpecOf(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		file    string
		process bool
		ok      bool
	}{
		{[]string{"--root", "/r", "create", "--bundle", "/b", "id"}, "/b/config.json", false, true},
		{[]string{"run", "--bundle=/b", "id"}, "/b/config.json", false, true},
		{[]string{"--log", "x", "exec", "--process", "/p.json", "--detach", "id"}, "/p.json", true, true},
		{[]string{"exec", "id", "sh"}, "", true, false},
		{[]string{"start", "id"}, "", false, false},
		{[]string{"delete", "--force", "id"}, "", false, false},
	} {
		file, process, ok := specOf(tc.args)
		if file != tc.file || process != tc.process || ok != tc.ok {
			t.Errorf("specOf(%q) = %q, %v, %v; want %q, %v, %v", tc.args, file, process, ok, tc.file, tc.process, tc.ok)
		}
	}
}

// A privileged container's capabilities less the one the machine withholds;
// a name the table does not know stays, and the rest of the spec is kept.
func TestFitDropsWhatTheMachineWithholds(t *testing.T) {
	held := map[string]bool{"CAP_SYS_ADMIN": true, "CAP_NET_ADMIN": true, "CAP_SYS_RESOURCE": false}
	all := []any{"CAP_SYS_ADMIN", "CAP_SYS_RESOURCE", "CAP_NET_ADMIN", "CAP_FROM_THE_FUTURE"}
	want := []string{"CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_FROM_THE_FUTURE"}
	caps := map[string]any{"bounding": all, "effective": all, "permitted": all}

	dir := t.TempDir()
	config := filepath.Join(dir, "config.json")
	write(t, config, map[string]any{"ociVersion": "1.2.0", "hostname": "n", "process": map[string]any{"capabilities": caps, "cwd": "/"}})
	if err := fit(config, false, held); err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Hostname string `json:"hostname"`
		Process  struct {
			Cwd          string              `json:"cwd"`
			Capabilities map[string][]string `json:"capabilities"`
		} `json:"process"`
	}
	read(t, config, &spec)
	if spec.Hostname != "n" || spec.Process.Cwd != "/" {
		t.Errorf("the rest of the spec changed: %+v", spec)
	}
	for _, set := range []string{"bounding", "effective", "permitted"} {
		if got := spec.Process.Capabilities[set]; !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", set, got, want)
		}
	}

	process := filepath.Join(dir, "process.json")
	write(t, process, map[string]any{"capabilities": caps, "args": []string{"sh"}})
	if err := fit(process, true, held); err != nil {
		t.Fatal(err)
	}
	var p struct {
		Args         []string            `json:"args"`
		Capabilities map[string][]string `json:"capabilities"`
	}
	read(t, process, &p)
	if !slices.Equal(p.Capabilities["effective"], want) || !slices.Equal(p.Args, []string{"sh"}) {
		t.Errorf("exec process: %+v", p)
	}
}

func TestBoundingSetReadsThisProcess(t *testing.T) {
	held, err := boundingSet()
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != len(capNames) {
		t.Errorf("%d capabilities known, want %d", len(held), len(capNames))
	}
}

func write(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
