package version

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestGet(t *testing.T) {
	got := Get()
	if got.Version == "" || got.GoVersion != runtime.Version() {
		t.Errorf("Get() = %+v: want a version and the toolchain's %s", got, runtime.Version())
	}
	if s := got.String(); !strings.HasPrefix(s, "ringfire "+got.Version+" (") || !strings.Contains(s, runtime.Version()) {
		t.Errorf("String() = %q", s)
	}
}

func TestStampedVersionWins(t *testing.T) {
	defer func(old string) { stamped = old }(stamped)
	stamped = "v9.8.7"
	if got := Get().Version; got != "v9.8.7" {
		t.Errorf("Version = %q with a stamped v9.8.7", got)
	}
}

func TestMetric(t *testing.T) {
	info := Info{Version: "v1.2.3", Revision: "abc", GoVersion: "go1.26.8"}
	reg := prometheus.NewRegistry()
	reg.MustRegister(info.Metric())
	want := `
# HELP ringfire_build_info 1, labelled with the version, VCS revision and Go version ringfire was built with.
# TYPE ringfire_build_info gauge
ringfire_build_info{goversion="go1.26.8",revision="abc",version="v1.2.3"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ringfire_build_info"); err != nil {
		t.Error(err)
	}
}
