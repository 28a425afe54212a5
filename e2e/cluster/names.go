// Package cluster is the end-to-end tests' handle on the local control plane
// of internal/devcluster: the same Cluster, Options and Start under the names
// the suites use, plus what only tests need (testing.go): RequireTools,
// StartForTest, and Shared, one cluster for a whole test package.
//
// The control plane itself lives in internal/devcluster, which does not
// import testing, so that `ringfire dev up` can run it from the release
// binary. Its package documentation describes what Start runs.
package cluster

import (
	"context"

	"github.com/ringfire/ringfire/internal/devcluster"
)

// Cluster is a running local control plane (devcluster.Cluster).
type Cluster = devcluster.Cluster

// Options configures a local control plane (devcluster.Options).
type Options = devcluster.Options

// Component names one process of the control plane (devcluster.Component).
type Component = devcluster.Component

// The components, in the order Start starts them.
const (
	Etcd              = devcluster.Etcd
	APIServer         = devcluster.APIServer
	ControllerManager = devcluster.ControllerManager
	KWOK              = devcluster.KWOK
)

// ToolsBinEnv names the environment variable that holds the tools directory
// (devcluster.ToolsBinEnv).
const ToolsBinEnv = devcluster.ToolsBinEnv

// Annotations on pods and nodes that the fake nodes obey (see devcluster).
const (
	PodDurationAnnotation = devcluster.PodDurationAnnotation
	PodExitCodeAnnotation = devcluster.PodExitCodeAnnotation
	KWOKNodeAnnotation    = devcluster.KWOKNodeAnnotation
)

// Start starts a local control plane (devcluster.Start). In a test,
// StartForTest or Shared stop it and report its logs for you.
func Start(ctx context.Context, opts Options) (*Cluster, error) { return devcluster.Start(ctx, opts) }

// StopDir stops a cluster left running in dir (devcluster.StopDir).
func StopDir(dir string) error { return devcluster.StopDir(dir) }

// NodeName is the name of the i-th fake node (devcluster.NodeName).
func NodeName(i int) string { return devcluster.NodeName(i) }
