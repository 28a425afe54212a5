// Command report turns the JSON reports of Volcano's e2e suites (Ginkgo's
// --ginkgo.json-report) into the Markdown table docs/conformance.md keeps:
// one row per spec, with its state and, for a failure, the first line of why.
//
//	go run ./e2e/conformance/report jobp.json cronjob.json > table.md
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// suiteReport is the part of a Ginkgo JSON report the table needs.
type suiteReport struct {
	SuiteDescription string
	SpecReports      []struct {
		ContainerHierarchyTexts []string
		LeafNodeText            string
		LeafNodeType            string
		State                   string
		RunTime                 time.Duration
		Failure                 struct{ Message string }
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: report REPORT.json...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := table(path); err != nil {
			fmt.Fprintln(os.Stderr, "report:", err)
			os.Exit(1)
		}
	}
}

// table prints one suite report's table and its totals.
func table(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var suites []suiteReport
	if err := json.Unmarshal(data, &suites); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, s := range suites {
		count := map[string]int{}
		var rows []string
		for _, r := range s.SpecReports {
			if r.LeafNodeType != "It" {
				continue
			}
			count[r.State]++
			name := strings.Join(append(append([]string{}, r.ContainerHierarchyTexts...), r.LeafNodeText), " / ")
			why := ""
			if r.State == "failed" || r.State == "timedout" || r.State == "panicked" {
				why, _, _ = strings.Cut(strings.TrimSpace(r.Failure.Message), "\n")
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %.0f s | %s |", cell(name), r.State, r.RunTime.Seconds(), cell(why)))
		}
		sort.Strings(rows)
		fmt.Printf("### %s\n\n", s.SuiteDescription)
		fmt.Printf("%d passed, %d failed, %d skipped.\n\n", count["passed"], count["failed"]+count["timedout"]+count["panicked"], count["skipped"])
		fmt.Println("| spec | state | time | why it failed |")
		fmt.Println("|---|---|---|---|")
		for _, row := range rows {
			fmt.Println(row)
		}
		fmt.Println()
	}
	return nil
}

// cell makes text fit in a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "\n", " ")
}
