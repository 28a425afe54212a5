package main

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"k8s.io/klog/v2"

	"github.com/ringfire/ringfire/internal/logbuf"
)

func TestParseKlogLine(t *testing.T) {
	for _, tc := range []struct {
		line    string
		level   hclog.Level
		at, msg string
	}{
		{"E1125 00:00:08.289607    7193 reflector.go:227] \"Failed to watch\" err=\"forbidden\"", hclog.Error, "reflector.go:227", "\"Failed to watch\" err=\"forbidden\""},
		{"W1125 00:00:08.289607       1 warnings.go:70] deprecated", hclog.Warn, "warnings.go:70", "deprecated"},
		{"I1125 00:00:08.289607       1 leaderelection.go:250] attempting", hclog.Info, "leaderelection.go:250", "attempting"},
		{"F1125 00:00:08.289607       1 main.go:1] fatal", hclog.Error, "main.go:1", "fatal"},
		{"no header here", hclog.Info, "", "no header here"},
		{"X1125 00:00:08.1 1 a.go:1] odd", hclog.Info, "", "X1125 00:00:08.1 1 a.go:1] odd"},
	} {
		level, at, msg := parseKlogLine(tc.line)
		if level != tc.level || at != tc.at || msg != tc.msg {
			t.Errorf("%q: %v %q %q, want %v %q %q", tc.line, level, at, msg, tc.level, tc.at, tc.msg)
		}
	}
}

// klog's own error and warning calls reach the logger at their levels.
func TestKlogKeepsItsLevels(t *testing.T) {
	var buf logbuf.Buffer
	routeKlog(hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Trace}))
	klog.Errorf("the list failed: %s", "forbidden")
	klog.Warning("a deprecated API")
	klog.Flush()
	out := buf.String()
	for _, want := range []string{"[ERROR] client-go: the list failed: forbidden: at=", "[WARN]  client-go: a deprecated API: at="} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "the list failed"); n != 1 {
		t.Errorf("the error logged %d times:\n%s", n, out)
	}
}
