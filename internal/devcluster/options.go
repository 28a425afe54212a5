package devcluster

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ToolsBinEnv names the environment variable that holds the directory of the
// binaries built by e2e/tools/build.sh (`make tools`; FindTools finds the
// same directory without it).
const ToolsBinEnv = "RINGFIRE_TOOLS_BIN"

// Options configures a local control plane. The zero value is usable.
type Options struct {
	// Nodes is the number of KWOK fake nodes to create. Default 3; a negative
	// value creates none.
	Nodes int
	// Dir holds certificates, kubeconfigs, etcd data and one log file per
	// component. Default: a new temporary directory, removed by Stop.
	Dir string
	// ToolsBin is the directory with etcd, kube-apiserver,
	// kube-controller-manager and kwok. Default: $RINGFIRE_TOOLS_BIN.
	ToolsBin string
	// Logger receives the harness's own progress messages. Default: stderr at info.
	Logger hclog.Logger

	// NodeCPU, NodeMemory and NodePods are each fake node's capacity and
	// allocatable. Defaults "32", "256Gi" and "110".
	NodeCPU, NodeMemory, NodePods string

	// DefaultPodDuration is how long a pod on a fake node runs before it
	// ends, unless its annotation PodDurationAnnotation says otherwise.
	// Default 1s.
	DefaultPodDuration time.Duration

	// KWOKPodParallelism is how many pod stages KWOK plays at once (its
	// podPlayStageParallelism). 0 keeps KWOK's default, 4: enough for the
	// suites; a benchmark that makes 100,000 pods Running raises it, or KWOK,
	// not the API server, sets the pace (about 20 pods/s at 4 on a busy one).
	KWOKPodParallelism int

	// StartTimeout bounds Start as a whole. Default 2 minutes.
	StartTimeout time.Duration

	// KubeScheduler also starts kube-scheduler, which places the pods of the
	// default scheduler (and of any other scheduler name it is configured
	// for) on the fake nodes. Off by default: the suites that test
	// ringfire's own gang scheduler want no second scheduler binding pods.
	KubeScheduler bool

	// AuditLog turns the API server's audit log on (Cluster.AuditLogPath):
	// every write on Jobs, Queues, Commands and the objects a Job owns, with
	// request and response bodies, so a test can check from outside the
	// replicas which of them wrote what and when. Off by default: it costs
	// disk and API server time that other suites do not need.
	AuditLog bool

	// ControllerManagerArgs are added to kube-controller-manager's flags,
	// after the harness's own (a repeated flag takes the last value): the
	// batch Job benchmark runs the Job controller at its defaults
	// (--kube-api-qps=20) and at raised limits this way.
	ControllerManagerArgs []string

	// APIServerArgs are added to kube-apiserver's flags, after the
	// harness's own (a repeated flag takes the last value): e2e/bench's
	// BenchmarkShardedWatch turns an alpha feature gate on this way
	// ("--feature-gates=ShardedListAndWatch=true").
	APIServerArgs []string

	// APIServerEnv is added to kube-apiserver's environment ("GOGC=200"):
	// e2e/bench's BenchmarkScale gives its collector room this way
	// (RINGFIRE_SCALE_APISERVER_ENV).
	APIServerEnv []string

	// RealNode also runs a real node on this machine: a kubelet with
	// containerd, runc and the bridge CNI plugin, kube-proxy and CoreDNS
	// (node RealNodeName, tainted RealNodeTaint, so only pods that tolerate
	// it land there). The API server then listens on the node's bridge
	// address rather than 127.0.0.1, so that pods reach it; kube-scheduler
	// runs. Needs root and e2e/node/build.sh's binaries in ToolsBin. One
	// real node per machine at a time.
	RealNode bool
}

// Annotations on a pod that drive its life on a KWOK node.
const (
	// PodDurationAnnotation is how long the pod runs before it ends, as a Go
	// duration ("2s", "1h"). Without it, Options.DefaultPodDuration.
	PodDurationAnnotation = "ringfire.io/e2e-duration"
	// PodExitCodeAnnotation is the exit code of the pod's containers: "0"
	// (or absent) ends the pod Succeeded, 1–255 ends it Failed with
	// state.terminated.exitCode set to it and reason Error. Any other value
	// leaves the pod Running.
	PodExitCodeAnnotation = "ringfire.io/e2e-exit-code"
)

// KWOKNodeAnnotation marks the nodes KWOK manages; the harness sets it on the
// nodes it creates and tells kwok to manage exactly those.
const KWOKNodeAnnotation = "kwok.x-k8s.io/node"

func (o Options) withDefaults() (Options, error) {
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Nodes < 0 {
		o.Nodes = 0
	}
	if o.ToolsBin == "" {
		o.ToolsBin = os.Getenv(ToolsBinEnv)
	}
	if o.ToolsBin == "" {
		return o, errors.New("no tools: set Options.ToolsBin or $" + ToolsBinEnv + " (`make tools` prints the directory)")
	}
	if o.Logger == nil {
		o.Logger = hclog.New(&hclog.LoggerOptions{Name: "cluster", Level: hclog.Info, Output: os.Stderr})
	}
	if o.NodeCPU == "" {
		o.NodeCPU = "32"
	}
	if o.NodeMemory == "" {
		o.NodeMemory = "256Gi"
	}
	if o.NodePods == "" {
		o.NodePods = "110"
	}
	for name, q := range map[string]string{"NodeCPU": o.NodeCPU, "NodeMemory": o.NodeMemory, "NodePods": o.NodePods} {
		if _, err := resource.ParseQuantity(q); err != nil {
			return o, fmt.Errorf("options: %s %q: %w", name, q, err)
		}
	}
	if o.DefaultPodDuration == 0 {
		o.DefaultPodDuration = time.Second
	}
	if o.DefaultPodDuration < 0 {
		return o, fmt.Errorf("options: DefaultPodDuration %v is negative", o.DefaultPodDuration)
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 2 * time.Minute
		if o.RealNode {
			o.StartTimeout = 4 * time.Minute
		}
	}
	if o.RealNode {
		o.KubeScheduler = true // the node's pods are the default scheduler's
	}
	return o, nil
}
