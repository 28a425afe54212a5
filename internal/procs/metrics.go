package procs

import (
	"strconv"
	"strings"
)

// MetricValue returns the sum of a metric's samples in a Prometheus text
// exposition over the label sets that carry every one of labels (each
// written as in the exposition, `name="value"`; none: every label set), and
// whether there was any.
func MetricValue(exposition, name string, labels ...string) (float64, bool) {
	sum, found := 0.0, false
	for line := range strings.Lines(exposition) {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		set := ""
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			set, rest = rest[1:end], rest[end+1:]
		}
		if !hasLabels(set, labels) {
			continue
		}
		fields := strings.Fields(rest) // value, then an optional timestamp
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
			sum, found = sum+v, true
		}
	}
	return sum, found
}

// hasLabels reports whether the label set set (the text between the braces)
// has each of labels, a whole pair each.
func hasLabels(set string, labels []string) bool {
	for _, l := range labels {
		if !strings.HasPrefix(set, l+",") && !strings.Contains(set, ","+l+",") &&
			set != l && !strings.HasSuffix(set, ","+l) {
			return false
		}
	}
	return true
}
