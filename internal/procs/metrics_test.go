package procs

import "testing"

func TestMetricValueSumsTheLabelSetsAsked(t *testing.T) {
	const exposition = `# HELP checks Checks.
checks_total{action="deny",policy="a"} 2
checks_total{action="deny",policy="b"} 3
checks_total{action="allow",policy="a"} 5
checks_total{xaction="deny",policy="a"} 7
checks_total_other 11
plain 13
`
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
		found  bool
	}{
		{"checks_total", nil, 17, true},
		{"checks_total", []string{`policy="a"`}, 14, true},
		{"checks_total", []string{`policy="a"`, `action="deny"`}, 2, true},
		{"checks_total", []string{`policy="c"`}, 0, false},
		{"plain", nil, 13, true},
		{"plain", []string{`policy="a"`}, 0, false},
	} {
		got, found := MetricValue(exposition, c.name, c.labels...)
		if got != c.want || found != c.found {
			t.Errorf("MetricValue(%s, %q) = %v, %v; want %v, %v", c.name, c.labels, got, found, c.want, c.found)
		}
	}
}
