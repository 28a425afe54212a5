package sidebyside

import (
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "anything / at all", true},
		{"job *: phases", "job a: phases", true},
		{"job *: phases", "job a: retries", false},
		{"pod *-main-?", "pod x-main-?", true},
		{"pod *-main-?", "pod x-main-0", false}, // ? is a character like any other
		{"a.b", "axb", false},                   // nor is . special
		{"Running (deleted), *", "Running (deleted), Pending", true},
	} {
		if got := glob(c.pattern, c.s); got != c.want {
			t.Errorf("glob(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}

func TestCompareFindsTheAllowanceOfEachDifference(t *testing.T) {
	sc := &Scenario{Name: "s", Description: "a scenario"}
	volcano := &Result{Rows: []Row{{"outcome", "settled"}, {"job a: phases", "Pending → Running"}, {"job a: retries", "0"}, {"only volcano", "x"}}}
	ringfire := &Result{Rows: []Row{{"outcome", "settled"}, {"job a: phases", "Pending"}, {"job a: retries", "1"}, {"only ringfire", "y"}}}
	allow := []Allowance{
		{Scenario: "s", Field: "job *: phases", Volcano: "Pending → *", Ringfire: "Pending", Reason: "because"},
		{Scenario: "s", Field: "job *: retries", Volcano: "2", Reason: "pinned to another value"},
		{Scenario: "other", Field: "*", Reason: "another scenario"},
	}
	c := Compare(sc, volcano, ringfire, allow)
	var fields []string
	for _, l := range c.Lines {
		fields = append(fields, l.Field)
	}
	if got := strings.Join(fields, ","); got != "outcome,job a: phases,job a: retries,only volcano,only ringfire" {
		t.Fatalf("fields in order %s", got)
	}
	if l := c.Lines[1]; l.Allowed != &allow[0] {
		t.Errorf("phases: allowed by %+v, want the first allowance", l.Allowed)
	}
	var unexplained []string
	for _, l := range c.Unexplained() {
		unexplained = append(unexplained, l.Field+"="+l.Volcano+"/"+l.Ringfire)
	}
	if got := strings.Join(unexplained, ","); got != "job a: retries=0/1,only volcano=x/(absent),only ringfire=(absent)/y" {
		t.Errorf("unexplained %s", got)
	}
	if unused := Unused(allow, []Comparison{c}); len(unused) != 2 || unused[0].Reason != "pinned to another value" {
		t.Errorf("unused %+v", unused)
	}
	md := c.Markdown()
	for _, want := range []string{"### s", "| outcome | settled | same |  |", "allowed: because", "| job a: retries | 0 | 1 | **differs** |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestAllowListLoads(t *testing.T) {
	allow, err := LoadAllowances("allow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(allow) == 0 {
		t.Fatal("an empty allow-list")
	}
}
