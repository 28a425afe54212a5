// Command report turns the JSON reports of Volcano's e2e suites (Ginkgo's
// --ginkgo.json-report) into the Markdown tables docs/conformance.md keeps.
//
//	go run ./e2e/conformance/report jobp.json cronjob.json
//	    one table per report: a row per spec, with its state and, for a
//	    failure, the first line of why
//	go run ./e2e/conformance/report -compare volcano=a.json ringfire=b.json ...
//	    one row per spec, one column per labelled report (the same suite run
//	    under different controllers), and a last column that flags the specs
//	    that pass under the first label but not under another
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// suiteReport is the part of a Ginkgo JSON report the tables need.
type suiteReport struct {
	SuiteDescription string
	SpecReports      []specReport
}

type specReport struct {
	ContainerHierarchyTexts []string
	LeafNodeText            string
	LeafNodeType            string
	State                   string
	RunTime                 time.Duration
	Failure                 struct{ Message string }
}

func (r specReport) name() string {
	return strings.Join(append(append([]string{}, r.ContainerHierarchyTexts...), r.LeafNodeText), " / ")
}

func (r specReport) failed() bool {
	return r.State == "failed" || r.State == "timedout" || r.State == "panicked"
}

// why is the first line of a failure's message, or nothing.
func (r specReport) why() string {
	if !r.failed() {
		return ""
	}
	why, _, _ := strings.Cut(strings.TrimSpace(r.Failure.Message), "\n")
	return why
}

func main() {
	compare := flag.Bool("compare", false, "compare LABEL=REPORT.json arguments spec by spec")
	flag.Parse()
	if flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: report REPORT.json... | report -compare LABEL=REPORT.json...")
		os.Exit(2)
	}
	var err error
	if *compare {
		err = compareReports(flag.Args())
	} else {
		for _, path := range flag.Args() {
			if err = table(path); err != nil {
				break
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func load(path string) ([]suiteReport, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var suites []suiteReport
	if err := json.Unmarshal(data, &suites); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return suites, nil
}

// specs are the It nodes of a report.
func specs(suites []suiteReport) []specReport {
	var out []specReport
	for _, s := range suites {
		for _, r := range s.SpecReports {
			if r.LeafNodeType == "It" {
				out = append(out, r)
			}
		}
	}
	return out
}

// totals reads "P passed, F failed, S skipped".
func totals(rs []specReport) string {
	count := map[string]int{}
	for _, r := range rs {
		count[r.State]++
	}
	failed := count["failed"] + count["timedout"] + count["panicked"]
	return fmt.Sprintf("%d passed, %d failed, %d skipped", count["passed"], failed, count["skipped"])
}

// table prints one suite report's table and its totals.
func table(path string) error {
	suites, err := load(path)
	if err != nil {
		return err
	}
	for _, s := range suites {
		rs := specs([]suiteReport{s})
		var rows []string
		for _, r := range rs {
			rows = append(rows, fmt.Sprintf("| %s | %s | %.0f s | %s |", cell(r.name()), r.State, r.RunTime.Seconds(), cell(r.why())))
		}
		sort.Strings(rows)
		fmt.Printf("### %s\n\n%s.\n\n", s.SuiteDescription, totals(rs))
		fmt.Println("| spec | state | time | why it failed |")
		fmt.Println("|---|---|---|---|")
		for _, row := range rows {
			fmt.Println(row)
		}
		fmt.Println()
	}
	return nil
}

// compareReports prints a spec × label matrix of states. The first label
// is the reference: a spec that passes there and not under another label
// is flagged, with that label's reason.
func compareReports(args []string) error {
	type column struct {
		label string
		specs map[string]specReport
		all   []specReport
	}
	var cols []column
	names := map[string]bool{}
	for _, arg := range args {
		label, path, ok := strings.Cut(arg, "=")
		if !ok {
			return fmt.Errorf("%q: want LABEL=REPORT.json", arg)
		}
		col := column{label: label, specs: map[string]specReport{}}
		if suites, err := load(path); err == nil {
			col.all = specs(suites)
			for _, r := range col.all {
				col.specs[r.name()] = r
				names[r.name()] = true
			}
		} else if !os.IsNotExist(err) {
			return err
		}
		cols = append(cols, col)
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)

	for _, c := range cols {
		if c.all == nil {
			fmt.Printf("- %s: no report\n", c.label)
			continue
		}
		fmt.Printf("- %s: %s\n", c.label, totals(c.all))
	}
	fmt.Println()
	header := "| spec |"
	rule := "|---|"
	for _, c := range cols {
		header += " " + c.label + " |"
		rule += "---|"
	}
	fmt.Println(header + " differs |")
	fmt.Println(rule + "---|")
	for _, n := range sorted {
		row := "| " + cell(n) + " |"
		var differs []string
		ref, refOK := cols[0].specs[n]
		for i, c := range cols {
			r, ok := c.specs[n]
			state := "–"
			if ok {
				state = r.State
			}
			row += " " + state + " |"
			if i > 0 && refOK && ref.State == "passed" && ok && r.State != "passed" {
				d := c.label + ": " + r.State
				if why := r.why(); why != "" {
					d += " (" + why + ")"
				}
				differs = append(differs, d)
			}
		}
		fmt.Println(row + " " + cell(strings.Join(differs, "; ")) + " |")
	}
	fmt.Println()
	return nil
}

// cell makes text fit in a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "\n", " ")
}
