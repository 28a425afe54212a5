package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// sample is one line of a Prometheus text exposition: a metric's labels and
// its value.
type sample struct {
	labels map[string]string
	value  float64
}

// samples returns every sample of the metric name in a Prometheus text
// exposition. procs.MetricValue sums a metric over its labels; counting
// requests by verb and resource needs the labels themselves.
func samples(exposition, name string) ([]sample, error) {
	var out []sample
	for line := range strings.Lines(exposition) {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		s := sample{labels: map[string]string{}}
		if rest[0] == '{' {
			var err error
			if s.labels, rest, err = parseLabels(rest[1:]); err != nil {
				return nil, fmt.Errorf("%s: %w in %q", name, err, strings.TrimSpace(line))
			}
		}
		fields := strings.Fields(rest) // value, then an optional timestamp
		if len(fields) == 0 {
			return nil, fmt.Errorf("%s: no value in %q", name, strings.TrimSpace(line))
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: value of %q: %w", name, strings.TrimSpace(line), err)
		}
		s.value = v
		out = append(out, s)
	}
	return out, nil
}

// parseLabels parses `name="value",...}` (the opening brace already read)
// and returns the labels and what follows the closing brace.
func parseLabels(s string) (map[string]string, string, error) {
	labels := map[string]string{}
	for {
		s = strings.TrimLeft(s, " ,")
		if s == "" {
			return nil, "", fmt.Errorf("labels not closed")
		}
		if s[0] == '}' {
			return labels, s[1:], nil
		}
		name, rest, ok := strings.Cut(s, "=")
		if !ok || !strings.HasPrefix(rest, `"`) {
			return nil, "", fmt.Errorf("label without a quoted value")
		}
		value, after, err := unquoteLabel(rest[1:])
		if err != nil {
			return nil, "", err
		}
		labels[strings.TrimSpace(name)] = value
		s = after
	}
}

// unquoteLabel reads a label value up to its closing quote, undoing the
// exposition format's escapes (\\, \" and \n).
func unquoteLabel(s string) (value, rest string, err error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), s[i+1:], nil
		case '\\':
			if i+1 == len(s) {
				return "", "", fmt.Errorf("label value ends in an escape")
			}
			i++
			if s[i] == 'n' {
				b.WriteByte('\n')
			} else {
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("label value not closed")
}
