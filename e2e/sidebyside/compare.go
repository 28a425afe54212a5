package sidebyside

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// Allowance is a known difference between Volcano and ringfire, and why it is accepted. Scenario
// and Field are patterns in which * stands for any text; Volcano and Ringfire, when given, are
// patterns the two values must match, so that an allowance covers the difference it names and
// not another one in the same field.
type Allowance struct {
	Scenario string `json:"scenario"`
	Field    string `json:"field"`
	Volcano  string `json:"volcano,omitempty"`
	Ringfire string `json:"ringfire,omitempty"`
	Reason   string `json:"reason"`
}

// LoadAllowances reads the allow-list.
func LoadAllowances(path string) ([]Allowance, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Allowance
	if err := yaml.UnmarshalStrict(data, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i, a := range out {
		if a.Scenario == "" || a.Field == "" || strings.TrimSpace(a.Reason) == "" {
			return nil, fmt.Errorf("%s: entry %d: scenario, field and reason are required", path, i+1)
		}
	}
	return out, nil
}

func (a Allowance) covers(scenario, field, volcano, ringfire string) bool {
	return glob(a.Scenario, scenario) && glob(a.Field, field) &&
		(a.Volcano == "" || glob(a.Volcano, volcano)) && (a.Ringfire == "" || glob(a.Ringfire, ringfire))
}

// glob matches s against pattern, in which * stands for any text (slashes included).
func glob(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile("^(?s:" + strings.Join(parts, ".*") + ")$").MatchString(s)
}

// absent is the value shown for a field one side does not have.
const absent = "(absent)"

// Comparison is the two sides' results of one scenario, field by field.
type Comparison struct {
	Scenario *Scenario
	Lines    []Line
}

// Line is one field of a Comparison.
type Line struct {
	Field, Volcano, Ringfire string
	// Allowed is the allowance that covers a difference, if any.
	Allowed *Allowance
}

// Same reports whether both sides had the same value.
func (l Line) Same() bool { return l.Volcano == l.Ringfire }

// Compare lines up the two results of sc field by field (Volcano's order, then the fields only
// ringfire has) and finds the allowance of each difference.
func Compare(sc *Scenario, volcano, ringfire *Result, allow []Allowance) Comparison {
	c := Comparison{Scenario: sc}
	seen := map[string]bool{}
	add := func(field string) {
		if seen[field] {
			return
		}
		seen[field] = true
		v, ok := volcano.Value(field)
		if !ok {
			v = absent
		}
		r, ok := ringfire.Value(field)
		if !ok {
			r = absent
		}
		l := Line{Field: field, Volcano: v, Ringfire: r}
		if !l.Same() {
			for i := range allow {
				if allow[i].covers(sc.Name, field, v, r) {
					l.Allowed = &allow[i]
					break
				}
			}
		}
		c.Lines = append(c.Lines, l)
	}
	for _, row := range volcano.Rows {
		add(row.Field)
	}
	for _, row := range ringfire.Rows {
		add(row.Field)
	}
	return c
}

// Unexplained are the lines that differ with no allowance.
func (c Comparison) Unexplained() []Line {
	var out []Line
	for _, l := range c.Lines {
		if !l.Same() && l.Allowed == nil {
			out = append(out, l)
		}
	}
	return out
}

// Markdown is the comparison as a section with a table: every field, Volcano's value,
// ringfire's ("same" when equal), and the verdict of each difference.
func (c Comparison) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n%s\n\n", c.Scenario.Name, strings.TrimSpace(c.Scenario.Description))
	b.WriteString("| field | Volcano | ringfire | verdict |\n|---|---|---|---|\n")
	for _, l := range c.Lines {
		r, verdict := cell(l.Ringfire), "**differs**"
		switch {
		case l.Same():
			r, verdict = "same", ""
		case l.Allowed != nil:
			verdict = "allowed: " + cell(l.Allowed.Reason)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(l.Field), cell(l.Volcano), r, verdict)
	}
	return b.String()
}

// cell makes s fit a Markdown table cell.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// Unused are the allowances that covered no line of the comparisons: differences they were
// written for no longer happen (or happened otherwise in this run).
func Unused(allow []Allowance, cs []Comparison) []Allowance {
	used := map[*Allowance]bool{}
	for _, c := range cs {
		for _, l := range c.Lines {
			if l.Allowed != nil {
				used[l.Allowed] = true
			}
		}
	}
	var out []Allowance
	for i := range allow {
		if !used[&allow[i]] {
			out = append(out, allow[i])
		}
	}
	return out
}

// Report is the whole comparison as a Markdown document: a summary line per scenario, then
// each scenario's table, then the allowances no line needed.
func Report(cs []Comparison, unused []Allowance, provenance string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Volcano and ringfire side by side\n\n%s.\n\n", provenance)
	b.WriteString("| scenario | fields | same | allowed | differ |\n|---|---|---|---|---|\n")
	for _, c := range cs {
		same, allowed := 0, 0
		for _, l := range c.Lines {
			switch {
			case l.Same():
				same++
			case l.Allowed != nil:
				allowed++
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d |\n", c.Scenario.Name, len(c.Lines), same, allowed, len(c.Unexplained()))
	}
	for _, c := range cs {
		b.WriteString("\n" + c.Markdown())
	}
	if len(unused) > 0 {
		b.WriteString("\n### Allowances no line needed in this run\n\n")
		for _, a := range unused {
			fmt.Fprintf(&b, "- %s / %s: %s\n", a.Scenario, a.Field, cell(a.Reason))
		}
	}
	return b.String()
}
