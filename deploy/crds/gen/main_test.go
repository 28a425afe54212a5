package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckedInCRDsAreUpToDate regenerates the CRDs and compares them with deploy/crds/. It
// needs the controller-gen that `make tools` builds, and takes about two seconds.
func TestCheckedInCRDsAreUpToDate(t *testing.T) {
	bin := os.Getenv("RINGFIRE_TOOLS_BIN")
	if bin == "" {
		if os.Getenv("RINGFIRE_E2E") == "1" {
			t.Fatal("$RINGFIRE_TOOLS_BIN is not set")
		}
		t.Skip("$RINGFIRE_TOOLS_BIN is not set: build the tools with `make tools` and export it")
	}
	out := t.TempDir()
	if err := generate(filepath.Join(bin, "controller-gen"), out); err != nil {
		t.Fatal(err)
	}
	for _, c := range crds {
		fresh, err := os.ReadFile(filepath.Join(out, c.file))
		if err != nil {
			t.Fatal(err)
		}
		checkedIn, err := os.ReadFile(filepath.Join("..", c.file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh, checkedIn) {
			t.Errorf("deploy/crds/%s is not what `make crds` generates: run `make crds` and commit", c.file)
		}
	}
}

func TestEditRefusesWhatTheSchemaDoesNotHave(t *testing.T) {
	newRoot := func() schema {
		return schema{"properties": schema{
			"spec": schema{"properties": schema{
				"tasks": schema{"items": schema{"properties": schema{
					"replicas": schema{"type": "integer", "minimum": 0},
				}}},
			}},
		}}
	}
	for _, tc := range []struct {
		name string
		edit edit
		want string // part of the error; "" for none
	}{
		{"rule on a list item", edit{at: "spec.tasks[]", rules: []rule{{Rule: "true", Message: "m"}}}, ""},
		{"set an unset keyword", edit{at: "spec.tasks[].replicas", set: map[string]any{"maximum": 9}}, ""},
		{"set a keyword to its value", edit{at: "spec.tasks[].replicas", set: map[string]any{"minimum": 0}}, ""},
		{"require an existing property", edit{at: "spec.tasks[]", required: []string{"replicas"}}, ""},
		{"missing property", edit{at: "spec.queue"}, `no property "queue"`},
		{"not a list", edit{at: "spec[]"}, `"spec" is not a list`},
		{"conflicting keyword", edit{at: "spec.tasks[].replicas", set: map[string]any{"minimum": 1}}, "already 0 upstream"},
		{"require a missing property", edit{at: "spec", required: []string{"queue"}}, `cannot require "queue"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.edit.apply(newRoot())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestDropDescriptionsKeepsPropertiesNamedDescription(t *testing.T) {
	node := schema{
		"description": "a task",
		"properties": schema{
			"description": schema{"description": "the field named description", "type": "string"},
		},
		"items": schema{"description": "an item"},
	}
	dropDescriptions(node)
	prop, ok := properties(node)["description"].(schema)
	if _, has := node["description"]; has || !ok || prop["description"] != nil || prop["type"] != "string" {
		t.Errorf("after dropDescriptions: %v", node)
	}
	if items := node["items"].(schema); items["description"] != nil {
		t.Errorf("items keep their description: %v", items)
	}
}
