package sidebyside

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScenariosLoad parses every scenario of scenarios/, so that a broken one fails without a
// control plane.
func TestScenariosLoad(t *testing.T) {
	scenarios, err := LoadScenarios("scenarios", "")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, sc := range scenarios {
		names[sc.Name] = true
		if strings.TrimSpace(sc.Description) == "" {
			t.Errorf("%s: no description", sc.Name)
		}
	}
	for _, want := range []string{"policy-restart-job", "policy-evicted", "policy-exit-code", "task-completed",
		"command-abort-resume", "depends-on", "depends-on-gang", "min-success", "plugins", "ttl", "cronjob"} {
		if !names[want] {
			t.Errorf("no scenario %s", want)
		}
	}
}

func TestScenarioDefaultsAndRefusals(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	job := "objects:\n- {apiVersion: batch.volcano.sh/v1alpha1, kind: Job, metadata: {name: j}}\n"
	sc, err := parseScenario(write("ok", "description: d\n"+job+"steps:\n- when: {job: j, deleted: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Timeout.Duration != 90*time.Second || sc.Settle.Duration != 3*time.Second || len(sc.Steps) != 1 {
		t.Errorf("defaults: %+v", sc)
	}
	for name, text := range map[string]string{
		"no-objects":   "description: d\n",
		"namespaced":   "objects:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: x}}\n",
		"two-actions":  job + "steps:\n- when: {job: j, phase: Running}\n  command: {action: AbortJob, job: j}\n  delete: {kind: Pod, name: p}\n",
		"no-subject":   job + "steps:\n- when: {phase: Running}\n",
		"two-subjects": job + "steps:\n- when: {job: j, cronJob: c, phase: Running}\n",
		"no-state":     job + "steps:\n- when: {job: j}\n",
		"two-states":   job + "steps:\n- when: {job: j, phase: Running, deleted: true}\n",
		"delete-both":  job + "steps:\n- when: {job: j, phase: Running}\n  delete: {kind: Pod, name: p, selector: a=b}\n",
		"unknown-key":  job + "timeuot: 3s\n",
		"bad-duration": job + "timeout: soon\n",
	} {
		if _, err := parseScenario(write(name, text)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
