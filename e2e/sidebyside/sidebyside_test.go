package sidebyside

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
)

// Environment variables of TestSideBySide.
const (
	// ReportEnv names a file the comparison tables are written to, in Markdown.
	ReportEnv = "SIDEBYSIDE_REPORT"
	// ScenariosEnv is a regexp: only the scenarios whose names match run.
	ScenariosEnv = "SIDEBYSIDE_SCENARIOS"
)

// TestSideBySide runs every scenario of scenarios/ under real Volcano, then under ringfire, each
// on a control plane of its own, and fails on any difference in what the Jobs did that
// allow.yaml does not explain.
func TestSideBySide(t *testing.T) {
	cluster.RequireTools(t)
	vcbin := VolcanoBin(t)
	scenarios, err := LoadScenarios("scenarios", os.Getenv(ScenariosEnv))
	if err != nil {
		t.Fatal(err)
	}
	allow, err := LoadAllowances("allow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bin := procs.Build(t)
	started := time.Now()

	var volcano, ringfire []*Result
	if !t.Run("volcano", func(t *testing.T) { volcano = Run(t, StartVolcano(t, vcbin), scenarios) }) {
		t.FailNow()
	}
	if !t.Run("ringfire", func(t *testing.T) { ringfire = Run(t, StartRingfire(t, bin), scenarios) }) {
		t.FailNow()
	}

	if volcano == nil || ringfire == nil { // a side left out by -run: show what the other did
		for _, side := range [][]*Result{volcano, ringfire} {
			for _, r := range side {
				t.Logf("\n%s", r.Markdown())
			}
		}
		return
	}
	var comparisons []Comparison
	var unexplained []string
	for i, sc := range scenarios {
		c := Compare(sc, volcano[i], ringfire[i], allow)
		comparisons = append(comparisons, c)
		t.Logf("\n%s", c.Markdown())
		for _, l := range c.Unexplained() {
			unexplained = append(unexplained, fmt.Sprintf("%s / %s:\n\tVolcano:  %s\n\tringfire: %s", sc.Name, l.Field, l.Volcano, l.Ringfire))
		}
	}
	unused := Unused(allow, comparisons)
	for _, a := range unused {
		t.Logf("allowance not needed in this run: scenario %q field %q (%s)", a.Scenario, a.Field, a.Reason)
	}
	if path := os.Getenv(ReportEnv); path != "" {
		report := Report(comparisons, unused, fmt.Sprintf("ringfire at %s; Volcano from %s; %s, %v",
			procs.Revision(), vcbin, started.Format("2006-01-02"), time.Since(started).Round(time.Second)))
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}
	if len(unexplained) > 0 {
		t.Errorf("%d differences between Volcano and ringfire that allow.yaml does not explain:\n%s",
			len(unexplained), strings.Join(unexplained, "\n"))
	}
}
