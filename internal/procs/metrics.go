package procs

import (
	"strconv"
	"strings"
)

// MetricValue returns the sum of a metric's samples over all their label
// sets in a Prometheus text exposition, and whether there was any.
func MetricValue(exposition, name string) (float64, bool) {
	sum, found := 0.0, false
	for line := range strings.Lines(exposition) {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			rest = rest[end+1:]
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
