// Package version says which ringfire a binary is: the release it was
// stamped with at build time, else what the Go toolchain recorded (the
// module version of `go install ...@vX`, the VCS revision of a checkout).
//
// A release build stamps it:
//
//	go build -ldflags "-X github.com/ringfire/ringfire/internal/version.stamped=v0.4.0" ./cmd/ringfire
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// stamped is set by the linker (-X) for a release; empty otherwise.
var stamped string

// Info is what a binary knows of its own build.
type Info struct {
	// Version is the release ("v0.4.0"), the module version of an installed
	// binary, or "devel" for a build from a checkout.
	Version string
	// Revision is the VCS commit the binary was built from, with "-dirty"
	// when the tree had changes; empty when the toolchain recorded none.
	Revision  string
	GoVersion string
}

// Get reads the build's Info.
func Get() Info {
	info := Info{Version: stamped, GoVersion: runtime.Version()}
	build, ok := debug.ReadBuildInfo()
	if !ok {
		if info.Version == "" {
			info.Version = "devel"
		}
		return info
	}
	if info.Version == "" {
		info.Version = build.Main.Version
	}
	if info.Version == "" || info.Version == "(devel)" {
		info.Version = "devel"
	}
	var dirty bool
	for _, s := range build.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && info.Revision != "" {
		info.Revision += "-dirty"
	}
	return info
}

// String is the line `ringfire version` prints.
func (i Info) String() string {
	rev := i.Revision
	if rev == "" {
		rev = "revision unknown"
	}
	return fmt.Sprintf("ringfire %s (%s, %s)", i.Version, rev, i.GoVersion)
}

// Metric is the gauge ringfire_build_info, 1, labelled with the build's
// version, revision and Go version, as Prometheus' own build_info metrics
// are: a dashboard joins it to tell which build each replica runs.
func (i Info) Metric() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ringfire_build_info",
		Help: "1, labelled with the version, VCS revision and Go version ringfire was built with.",
		ConstLabels: prometheus.Labels{
			"version": i.Version, "revision": i.Revision, "goversion": i.GoVersion,
		},
	})
	g.Set(1)
	return g
}
