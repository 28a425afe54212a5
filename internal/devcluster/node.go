package devcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The real node: a kubelet with containerd, runc and the bridge CNI plugin,
// kube-proxy for Service addresses and CoreDNS for cluster names, all on this
// machine (Options.RealNode). Its pods live on a bridge the harness makes;
// the host keeps ip_forward off, so nothing a pod sends leaves the machine.
const (
	Containerd Component = "containerd"
	CoreDNS    Component = "coredns"
	KubeProxy  Component = "kube-proxy"
	Kubelet    Component = "kubelet"
)

// nodeComponents are the real node's processes, in start order.
var nodeComponents = []Component{Containerd, CoreDNS, KubeProxy, Kubelet}

// The real node's network. The bridge carries the host's address on the pod
// network: the API server, CoreDNS and the kubelet listen there, so pods reach
// them without the host forwarding a packet.
const (
	// RealNodeName is the real node's name.
	RealNodeName = "ringfire-node"
	// RealNodeLabel is set on the real node ("true"), and RealNodeTaint
	// (NoSchedule) keeps off it every pod that does not tolerate it: the fake
	// pods of test Jobs, whose images the node could not pull.
	RealNodeLabel = "ringfire.io/real-node"
	RealNodeTaint = "ringfire.io/real-node"

	nodeBridge  = "ringfire0"
	nodeCIDR    = "10.244.0.0/24"
	nodeGateway = "10.244.0.1" // the host, on the bridge
	// nodeRangeEnd is the last address a pod gets: the bridge probe's two
	// ends (nodeProbe) take 10.244.0.253 and .254.
	nodeRangeEnd = "10.244.0.250"
	// nodeCgroup is the cgroup (in every v1 hierarchy) the kubelet puts pods
	// under, so that a cleanup finds exactly the node's processes.
	nodeCgroup = "ringfire-node"
	// SandboxImage is the pod sandbox image (e2e/node/tools/pause), loaded
	// into containerd by the harness; nothing is pulled.
	SandboxImage  = "ringfire.local/pause:1"
	clusterDomain = "cluster.local"
)

// nodePaths are the real node's files and directories under the cluster's.
type nodePaths struct {
	root       string // <dir>/node
	containerd string // config.toml
	socket     string
	cniConf    string // directory
	kubelet    string // the kubelet's --root-dir
	kubeletCfg string
	proxyCfg   string
	corefile   string
	podLogs    string
	volumes    string // the hostPath PersistentVolumes' directories
}

func (c *Cluster) nodePaths() nodePaths {
	root := filepath.Join(c.dir, "node")
	return nodePaths{
		root:       root,
		containerd: filepath.Join(root, "containerd.toml"),
		socket:     filepath.Join(root, "run", "containerd.sock"),
		cniConf:    filepath.Join(root, "cni"),
		kubelet:    filepath.Join(root, "kubelet"),
		kubeletCfg: filepath.Join(root, "kubelet.yaml"),
		proxyCfg:   filepath.Join(root, "kube-proxy.yaml"),
		corefile:   filepath.Join(root, "Corefile"),
		podLogs:    filepath.Join(root, "pod-logs"),
		volumes:    filepath.Join(root, "volumes"),
	}
}

// ContainerdSocket is the real node's containerd socket, for ctr.
func (c *Cluster) ContainerdSocket() string { return c.nodePaths().socket }

// nodePreflight says what is missing before anything starts.
func (c *Cluster) nodePreflight() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("a real node needs root (the kubelet and containerd mount, make cgroups and network namespaces)")
	}
	var missing []string
	for _, name := range []string{"kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2", "ctr", "coredns", "mkimage", "pause"} {
		if _, err := os.Stat(filepath.Join(c.opts.ToolsBin, name)); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("real node: %s not built in %s (e2e/node/build.sh builds them)", strings.Join(missing, ", "), c.opts.ToolsBin)
	}
	for _, bin := range []string{"runc", "iptables", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("real node: %s not installed (e2e/node/deps.sh installs it)", bin)
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, plugin)); err != nil {
			return fmt.Errorf("real node: CNI plugin %s not in %s (e2e/node/deps.sh installs Debian's containernetworking-plugins)", plugin, cniBinDir)
		}
	}
	return nil
}

const cniBinDir = "/usr/lib/cni"

// nodeLockPath is held (flock) by the cluster that runs the machine's real
// node: the bridge, cgroup and iptables chains are per machine.
const nodeLockPath = "/run/ringfire-node.lock"

// nodeMarker marks a directory as a real node's (<dir>/node), so that a
// later cleanup finds what a node that died left mounted there.
const nodeMarker = ".ringfire-node"

// lockNode takes the machine's node lock and removes what a node that died
// left behind.
func (c *Cluster) lockNode() error {
	f, err := os.OpenFile(nodeLockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("real node: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return fmt.Errorf("real node: another local cluster runs the real node of this machine (%s is locked); one at a time", nodeLockPath)
	}
	c.nodeLock = f
	cleanNodeHost(c.log.Warn)
	return nil
}

// setUpNodeHost marks the node directory, makes the bridge with the host's
// address on it, lets its traffic through the host's firewall (nodenet.go)
// and checks that two pods on it will reach each other, and makes the node's
// cgroups.
func (c *Cluster) setUpNodeHost(ctx context.Context) error {
	p := c.nodePaths()
	if err := os.MkdirAll(p.root, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(p.root, nodeMarker), nil, 0o644); err != nil {
		return err
	}
	if err := run("ip", "link", "add", nodeBridge, "type", "bridge"); err != nil {
		return err
	}
	if err := run("ip", "addr", "add", nodeGateway+"/24", "dev", nodeBridge); err != nil {
		return err
	}
	if err := run("ip", "link", "set", nodeBridge, "up"); err != nil {
		return err
	}
	if err := allowBridge("iptables", nodeBridge); err != nil {
		return err
	}
	fw := readForwarding("iptables")
	c.log.Debug("host forwarding", "bridge_nf_call_iptables", fw.bridgeNF, "forward_policy", fw.policy)
	probed := time.Now()
	if err := nodeProbe.check(ctx); err != nil {
		return err
	}
	c.log.Debug("pods on the node's bridge reach each other", "probe", time.Since(probed))
	for _, h := range cgroupHierarchies() {
		if err := os.MkdirAll(filepath.Join(h, nodeCgroup), 0o755); err != nil {
			return fmt.Errorf("make the node's cgroup: %w", err)
		}
	}
	return nil
}

// CheckPodNetwork probes again what Start probed before the kubelet started:
// that two pods on the real node's bridge reach each other over TCP. It
// returns why not, naming what on the host drops their traffic, within a few
// seconds; a suite whose pods do not become ready calls it to say so at
// once rather than at its timeout.
func (c *Cluster) CheckPodNetwork(ctx context.Context) error {
	if c.nodeLock == nil {
		return fmt.Errorf("check the pod network: the cluster runs no real node")
	}
	return nodeProbe.check(ctx)
}

// releaseNode cleans the machine after the node's processes stopped and
// gives up the node lock.
func (c *Cluster) releaseNode() {
	if c.nodeLock == nil {
		return // another cluster's node, or none: not ours to clean
	}
	cleanNodeHost(c.log.Warn)
	c.nodeLock.Close()
	c.nodeLock = nil
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// nodeReady reports whether the real node is registered and Ready.
func (c *Cluster) nodeReady(ctx context.Context) (bool, error) {
	n, err := c.clientset.CoreV1().Nodes().Get(ctx, RealNodeName, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue, fmt.Errorf("node %s not ready: %s", RealNodeName, cond.Message)
		}
	}
	return false, nil
}

// LoadImage imports an image archive (mkimage's output, or `docker save`'s)
// into the real node's containerd, where the kubelet finds it.
func (c *Cluster) LoadImage(ctx context.Context, archive string) error {
	if !c.opts.RealNode {
		return fmt.Errorf("load image: the cluster has no real node")
	}
	out, err := exec.CommandContext(ctx, c.bin("ctr"), "--address", c.nodePaths().socket, "--namespace", "k8s.io",
		"images", "import", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images import %s: %w: %s", archive, err, out)
	}
	return nil
}

// startNode starts containerd, loads the sandbox image, then CoreDNS,
// kube-proxy and the kubelet, and waits until the node is Ready.
func (c *Cluster) startNode(ctx context.Context) error {
	p := c.nodePaths()
	if err := c.launch(Containerd); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "containerd serving", []Component{Containerd}, func(ctx context.Context) (bool, error) {
		out, err := exec.CommandContext(ctx, c.bin("ctr"), "--address", p.socket, "version").CombinedOutput()
		if err != nil {
			return false, fmt.Errorf("ctr version: %w: %s", err, out)
		}
		return true, nil
	}); err != nil {
		return err
	}
	pause := filepath.Join(p.root, "pause.tar")
	out, err := exec.CommandContext(ctx, c.bin("mkimage"), "-name", SandboxImage, "-out", pause,
		"-file", "/pause="+c.bin("pause"), "-entrypoint", "/pause", "-user", "65535:65535").CombinedOutput()
	if err != nil {
		return fmt.Errorf("build the sandbox image: %w: %s", err, out)
	}
	if err := c.LoadImage(ctx, pause); err != nil {
		return err
	}
	for _, name := range []Component{CoreDNS, KubeProxy, Kubelet} {
		if err := c.launch(name); err != nil {
			return err
		}
	}
	if err := c.waitFor(ctx, "real node Ready", c.components(), c.nodeReady); err != nil {
		return err
	}
	return nil
}
