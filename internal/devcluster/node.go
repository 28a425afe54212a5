package devcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// cleanNodeHost removes what real nodes of this machine left: their pods'
// processes (everything in the node cgroup) and the cgroups, the containerd
// shims of their node directories, the mounts under those directories
// (container root filesystems, network namespaces, secret volumes), the
// iptables chains of kube-proxy and the kubelet, and the bridge. Only the
// holder of the node lock calls it, after its own containerd and kubelet
// stopped (or before they start), so nothing found is in use. Safe to call
// when nothing is left.
func cleanNodeHost(warn func(string, ...any)) {
	hier := cgroupHierarchies()
	// A few rounds catch children forked while the tree was walked.
	for range 5 {
		n := 0
		for _, h := range hier {
			n += killCgroupTree(filepath.Join(h, nodeCgroup))
		}
		if n == 0 {
			break
		}
	}
	killNodeShims()
	for _, h := range hier {
		removeCgroupTree(filepath.Join(h, nodeCgroup))
	}
	unmountNodeDirs(warn)
	flushKubeChains(warn)
	if _, err := net.InterfaceByName(nodeBridge); err == nil {
		if err := run("ip", "link", "del", nodeBridge); err != nil {
			warn("remove the node's bridge", "error", err)
		}
	}
}

// nodeRootOf returns the marked node directory path lies in, or "".
func nodeRootOf(path string) string {
	for d := filepath.Dir(path); d != "/" && d != "."; d = filepath.Dir(d) {
		if filepath.Base(d) == "node" {
			if _, err := os.Stat(filepath.Join(d, nodeMarker)); err == nil {
				return d
			}
		}
	}
	return ""
}

// unmountNodeDirs unmounts every mount point inside a marked node directory,
// deepest first.
func unmountNodeDirs(warn func(string, ...any)) {
	for range 3 {
		var mounts []string
		for _, mp := range mountPoints() {
			if nodeRootOf(mp) != "" {
				mounts = append(mounts, mp)
			}
		}
		if len(mounts) == 0 {
			return
		}
		for i := len(mounts) - 1; i >= 0; i-- {
			if err := syscall.Unmount(mounts[i], syscall.MNT_DETACH); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
				warn("unmount", "path", mounts[i], "error", err)
			}
		}
	}
}

// mountPoints lists the machine's mount points in mount order.
func mountPoints() []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		out = append(out, unescapeMount(f[4]))
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupHierarchies are the mounted cgroup v1 hierarchies the kubelet uses.
func cgroupHierarchies() []string {
	var out []string
	for _, name := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "blkio", "devices", "freezer", "hugetlb", "systemd"} {
		p := filepath.Join("/sys/fs/cgroup", name)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			out = append(out, p)
		}
	}
	return out
}

// killCgroupTree sends SIGKILL to every process in the cgroup and below it
// and returns how many it found.
func killCgroupTree(root string) int {
	n := 0
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				n++
			}
		}
		return nil
	})
	return n
}

// removeCgroupTree removes the (empty) cgroups under root, children first.
func removeCgroupTree(root string) {
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = syscall.Rmdir(dirs[i])
	}
}

// killNodeShims kills the containerd-shim-runc-v2 processes of the node
// directories' containerd (their -address is a socket in one): a shim holds
// its containers' state for as long as it lives.
func killNodeShims() {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		if len(args) == 0 || filepath.Base(args[0]) != "containerd-shim-runc-v2" {
			continue
		}
		for i, a := range args {
			if a == "-address" && i+1 < len(args) && nodeRootOf(args[i+1]) != "" {
				if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	}
}

// flushKubeChains removes the iptables chains of kube-proxy and the kubelet
// (KUBE-*), IPv4 and IPv6, as `kube-proxy --cleanup` would: the jumps to them
// from the built-in chains, then the chains.
func flushKubeChains(warn func(string, ...any)) {
	for _, family := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(family); err == nil {
			flushKubeChainsOf(family, warn)
		}
	}
}

func flushKubeChainsOf(iptables string, warn func(string, ...any)) {
	for _, table := range []string{"nat", "filter", "mangle"} {
		out, err := exec.Command(iptables+"-save", "-t", table).Output()
		if err != nil {
			continue
		}
		var rules []string
		var chains []string
		for _, line := range strings.Split(string(out), "\n") {
			switch {
			case strings.HasPrefix(line, ":KUBE-"):
				chains = append(chains, strings.Fields(line[1:])[0])
			case strings.HasPrefix(line, "-A ") && strings.Contains(line, "-j KUBE-") && !strings.HasPrefix(line, "-A KUBE-"):
				rules = append(rules, line)
			}
		}
		for _, r := range rules {
			args := append([]string{"-t", table, "-D"}, saveFields(strings.TrimPrefix(r, "-A "))...)
			if err := run(iptables, args...); err != nil {
				warn("remove a kube-proxy rule", "rule", r, "error", err)
			}
		}
		for _, ch := range chains {
			_ = run(iptables, "-t", table, "-F", ch)
		}
		for _, ch := range chains {
			_ = run(iptables, "-t", table, "-X", ch)
		}
	}
}

// saveFields splits a rule as iptables-save prints it into arguments: on
// spaces, except inside double quotes, which it drops (comments are quoted).
func saveFields(rule string) []string {
	var out []string
	var cur strings.Builder
	quoted, have := false, false
	for i := 0; i < len(rule); i++ {
		ch := rule[i]
		switch {
		case ch == '\\' && quoted && i+1 < len(rule):
			i++
			cur.WriteByte(rule[i])
		case ch == '"':
			quoted, have = !quoted, true
		case ch == ' ' && !quoted:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(ch)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
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
