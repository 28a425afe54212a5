package adversarytest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// logWrites logs the API server's most frequent writes of the world, by
// resource and verb, with their mean time (apiserver_request_total and
// _duration_seconds): what the attacks, and ringfire's answers to them, cost
// the control plane.
func (w *world) logWrites(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := w.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Logf("read the API server's metrics: %v", err)
		return
	}
	type row struct {
		what string
		n    float64
	}
	var rows []row
	sums, counts := map[string]float64{}, map[string]float64{}
	for line := range strings.Lines(string(raw)) {
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		l := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				l[k] = strings.Trim(v, `"`)
			}
		}
		switch l["verb"] {
		case "POST", "PUT", "PATCH", "DELETE":
		default:
			continue
		}
		what := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			what += "/" + l["subresource"]
		}
		switch name {
		case "apiserver_request_total":
			rows = append(rows, row{what + " " + l["code"], n})
		case "apiserver_request_duration_seconds_sum":
			sums[what] += n
		case "apiserver_request_duration_seconds_count":
			counts[what] += n
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return int(b.n - a.n) })
	var top []string
	for _, r := range rows[:min(12, len(rows))] {
		what, _, _ := strings.Cut(r.what[strings.Index(r.what, " ")+1:], " ")
		verb, _, _ := strings.Cut(r.what, " ")
		mean := ""
		if c := counts[verb+" "+what]; c > 0 {
			mean = fmt.Sprintf(" (mean %.0f ms)", 1000*sums[verb+" "+what]/c)
		}
		top = append(top, fmt.Sprintf("%s: %.0f%s", r.what, r.n, mean))
	}
	t.Logf("the API server's most frequent writes: %s", strings.Join(top, ", "))
}
