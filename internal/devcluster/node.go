package devcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

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
// address on it and the node's cgroups.
func (c *Cluster) setUpNodeHost() error {
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
	for _, h := range cgroupHierarchies() {
		if err := os.MkdirAll(filepath.Join(h, nodeCgroup), 0o755); err != nil {
			return fmt.Errorf("make the node's cgroup: %w", err)
		}
	}
	return nil
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

// writeNodeFiles writes the configurations of containerd, the CNI network,
// CoreDNS, kube-proxy and the kubelet, and records their command lines.
func (c *Cluster) writeNodeFiles(f credentialFiles, ports []int) error {
	p := c.nodePaths()
	for _, d := range []string{p.root, filepath.Dir(p.socket), p.cniConf, p.kubelet, p.podLogs, p.volumes} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	kubeletPort, kubeletHealthz, proxyHealthz, proxyMetrics, dnsReady := ports[0], ports[1], ports[2], ports[3], ports[4]

	files := map[string]string{
		p.containerd: fmt.Sprintf(containerdConfig, filepath.Join(p.root, "containerd"), filepath.Join(p.root, "run"),
			p.socket, filepath.Join(c.opts.ToolsBin, "containerd-shim-runc-v2"), cniBinDir, p.cniConf, SandboxImage),
		filepath.Join(p.cniConf, "10-ringfire.conflist"): fmt.Sprintf(cniConfig, nodeBridge, nodeCIDR, nodeGateway,
			nodeGateway, filepath.Join(p.root, "ipam")),
		p.corefile: fmt.Sprintf(corefile, nodeGateway, dnsReady, clusterDomain, f.nodeDNSKubeconfig),
		p.proxyCfg: fmt.Sprintf(kubeProxyConfig, f.nodeProxyKubeconfig, RealNodeName, proxyHealthz, proxyMetrics, nodeCIDR),
		p.kubeletCfg: fmt.Sprintf(kubeletConfig, nodeGateway, kubeletPort, kubeletHealthz, f.caCert, nodeGateway,
			clusterDomain, "unix://"+p.socket, "/"+nodeCgroup, p.podLogs, RealNodeTaint),
		filepath.Join(p.root, "resolv.conf"): "",
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	c.argv[Containerd] = []string{c.bin(Containerd), "--config=" + p.containerd, "--log-level=warn"}
	c.argv[CoreDNS] = []string{c.bin(CoreDNS), "-conf=" + p.corefile}
	c.argv[KubeProxy] = []string{c.bin(KubeProxy), "--config=" + p.proxyCfg, "--v=1"}
	c.argv[Kubelet] = []string{c.bin(Kubelet),
		"--config=" + p.kubeletCfg,
		"--kubeconfig=" + f.nodeKubeletKubeconfig,
		"--root-dir=" + p.kubelet,
		"--hostname-override=" + RealNodeName,
		"--node-ip=" + nodeGateway,
		"--node-labels=" + RealNodeLabel + "=true",
		"--v=1",
	}
	return nil
}

// containerdConfig: root, state, socket, shim, CNI binaries, CNI configs, sandbox image.
const containerdConfig = `version = 3
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = %[3]q

[plugins."io.containerd.cri.v1.runtime"]
  enable_selinux = false
  # This machine lacks CAP_SYS_RESOURCE: no negative oom_score_adj.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      runtime_path = %[4]q
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [%[5]q]
    conf_dir = %[6]q

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = %[7]q
`

// cniConfig: a bridge without the gateway role (the harness gave the bridge
// the host's address; the plugin would otherwise turn on ip_forward), and a
// default route through the host, which delivers what is its own and drops
// the rest.
const cniConfig = `{
  "cniVersion": "1.0.0",
  "name": "ringfire",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %[1]q,
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %[2]q, "gateway": %[3]q}]],
        "routes": [{"dst": "0.0.0.0/0", "gw": %[4]q}],
        "dataDir": %[5]q
      }
    }
  ]
}
`

// corefile: listen address, readiness port, cluster domain, kubeconfig. No
// forward plugin: names outside the cluster are refused, nothing leaves.
const corefile = `.:53 {
    bind %[1]s
    ready 127.0.0.1:%[2]d
    errors
    cache 5
    kubernetes %[3]s in-addr.arpa ip6.arpa {
        kubeconfig %[4]s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
}
`

// kubeProxyConfig: kubeconfig, node, healthz and metrics ports, cluster CIDR.
// conntrack limits of 0 leave the host's sysctls alone.
const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %[1]s
hostnameOverride: %[2]s
healthzBindAddress: 127.0.0.1:%[3]d
metricsBindAddress: 127.0.0.1:%[4]d
mode: iptables
clusterCIDR: %[5]s
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`

// kubeletConfig: address, port, healthz port, client CA, cluster DNS, domain,
// runtime endpoint, cgroup root, pod logs, taint.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
port: %[2]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[3]d
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %[4]s
authorization:
  mode: Webhook
clusterDNS: [%[5]s]
clusterDomain: %[6]s
resolvConf: ""
containerRuntimeEndpoint: %[7]s
cgroupDriver: cgroupfs
cgroupRoot: %[8]s
# This machine mounts cgroup v1.
failCgroupV1: false
failSwapOn: false
podLogsDir: %[9]s
# The kubelet would refuse to start on this machine's kernel settings with
# true; with false it sets the few it needs (vm.overcommit_memory,
# kernel.panic, kernel.panic_on_oops).
protectKernelDefaults: false
serializeImagePulls: false
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
registerWithTaints:
  - key: %[10]s
    value: "true"
    effect: NoSchedule
nodeStatusUpdateFrequency: 5s
syncFrequency: 10s
`

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
