package devcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
)

// The real node's configuration files, rendered from the templates below
// with one nodeConfigValues.

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

	files, err := nodeConfigFiles(p, nodeConfigValues{
		Root:               filepath.Join(p.root, "containerd"),
		State:              filepath.Join(p.root, "run"),
		Socket:             p.socket,
		Shim:               filepath.Join(c.opts.ToolsBin, "containerd-shim-runc-v2"),
		CNIBin:             cniBinDir,
		CNIConf:            p.cniConf,
		SandboxImage:       SandboxImage,
		Bridge:             nodeBridge,
		CIDR:               nodeCIDR,
		Gateway:            nodeGateway,
		RangeEnd:           nodeRangeEnd,
		IPAMDir:            filepath.Join(p.root, "ipam"),
		DNSReadyPort:       dnsReady,
		ClusterDomain:      clusterDomain,
		DNSKubeconfig:      f.nodeDNSKubeconfig,
		ProxyKubeconfig:    f.nodeProxyKubeconfig,
		NodeName:           RealNodeName,
		ProxyHealthzPort:   proxyHealthz,
		ProxyMetricsPort:   proxyMetrics,
		KubeletPort:        kubeletPort,
		KubeletHealthzPort: kubeletHealthz,
		ClientCA:           f.caCert,
		RuntimeEndpoint:    "unix://" + p.socket,
		CgroupRoot:         "/" + nodeCgroup,
		PodLogs:            p.podLogs,
		Taint:              RealNodeTaint,
	})
	if err != nil {
		return err
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

// nodeConfigValues fill the real node's configuration templates.
type nodeConfigValues struct {
	// containerd: its root and state directories, its socket, the runc
	// shim, the CNI plugins' directory and configurations, the sandbox image.
	Root, State, Socket, Shim string
	CNIBin, CNIConf           string
	SandboxImage              string

	// The pod network: the bridge, its CIDR, the host's address on it
	// (the pods' gateway, where CoreDNS and the kubelet listen), the
	// last address it gives a pod (those above are the bridge probe's), the
	// host-local IPAM's directory.
	Bridge, CIDR, Gateway, RangeEnd, IPAMDir string

	// CoreDNS: its readiness port, the cluster domain, its kubeconfig.
	DNSReadyPort  int
	ClusterDomain string
	DNSKubeconfig string

	// kube-proxy: its kubeconfig, the node's name, its healthz and metrics
	// ports.
	ProxyKubeconfig                    string
	NodeName                           string
	ProxyHealthzPort, ProxyMetricsPort int

	// The kubelet: its port and healthz port, the client CA, the runtime
	// endpoint, the cgroup root, the pod logs' directory, the taint it
	// registers the node with.
	KubeletPort, KubeletHealthzPort int
	ClientCA                        string
	RuntimeEndpoint                 string
	CgroupRoot                      string
	PodLogs                         string
	Taint                           string
}

// nodeConfigFiles renders the node's configuration files, by path.
func nodeConfigFiles(p nodePaths, v nodeConfigValues) (map[string]string, error) {
	files := map[string]string{filepath.Join(p.root, "resolv.conf"): ""}
	for path, t := range map[string]*template.Template{
		p.containerd: containerdConfig,
		filepath.Join(p.cniConf, "10-ringfire.conflist"): cniConfig,
		p.corefile:   corefile,
		p.proxyCfg:   kubeProxyConfig,
		p.kubeletCfg: kubeletConfig,
	} {
		s, err := render(t, v)
		if err != nil {
			return nil, err
		}
		files[path] = s
	}
	return files, nil
}

// nodeTemplate parses a configuration template. quote quotes a string as Go
// does (%q), which TOML and JSON read back for the paths and names used.
func nodeTemplate(name, text string) *template.Template {
	return template.Must(template.New(name).Funcs(template.FuncMap{"quote": strconv.Quote}).Parse(text))
}

// render executes a template with data.
func render(t *template.Template, data any) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("render %s: %w", t.Name(), err)
	}
	return b.String(), nil
}

// containerdConfig is containerd's config.toml: the CRI plugin with runc
// through the shim, the bridge CNI plugin and the sandbox image.
var containerdConfig = nodeTemplate("containerd.toml", `version = 3
root = {{quote .Root}}
state = {{quote .State}}
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = {{quote .Socket}}

[plugins."io.containerd.cri.v1.runtime"]
  enable_selinux = false
  # This machine lacks CAP_SYS_RESOURCE: no negative oom_score_adj.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      runtime_path = {{quote .Shim}}
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [{{quote .CNIBin}}]
    conf_dir = {{quote .CNIConf}}

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = {{quote .SandboxImage}}
`)

// cniConfig is the pod network: a bridge without the gateway role (the
// harness gave the bridge the host's address; the plugin would otherwise turn
// on ip_forward), and a default route through the host, which delivers what
// is its own and drops the rest.
var cniConfig = nodeTemplate("10-ringfire.conflist", `{
  "cniVersion": "1.0.0",
  "name": "ringfire",
  "plugins": [
    {
      "type": "bridge",
      "bridge": {{quote .Bridge}},
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": {{quote .CIDR}}, "rangeEnd": {{quote .RangeEnd}}, "gateway": {{quote .Gateway}}}]],
        "routes": [{"dst": "0.0.0.0/0", "gw": {{quote .Gateway}}}],
        "dataDir": {{quote .IPAMDir}}
      }
    }
  ]
}
`)

// corefile is CoreDNS's: the cluster's names through the API server. No
// forward plugin: names outside the cluster are refused, nothing leaves.
var corefile = nodeTemplate("Corefile", `.:53 {
    bind {{.Gateway}}
    ready 127.0.0.1:{{.DNSReadyPort}}
    errors
    cache 5
    kubernetes {{.ClusterDomain}} in-addr.arpa ip6.arpa {
        kubeconfig {{.DNSKubeconfig}}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
}
`)

// kubeProxyConfig is kube-proxy's configuration, iptables mode. The
// conntrack limits of 0 leave the host's sysctls alone.
var kubeProxyConfig = nodeTemplate("kube-proxy.yaml", `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: {{.ProxyKubeconfig}}
hostnameOverride: {{.NodeName}}
healthzBindAddress: 127.0.0.1:{{.ProxyHealthzPort}}
metricsBindAddress: 127.0.0.1:{{.ProxyMetricsPort}}
mode: iptables
clusterCIDR: {{.CIDR}}
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`)

// kubeletConfig is the kubelet's configuration: served on the bridge
// address, webhook authentication and authorization, the cluster DNS on the
// bridge, containerd, cgroupfs under the node cgroup, registered with the
// real-node taint.
var kubeletConfig = nodeTemplate("kubelet.yaml", `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: {{.Gateway}}
port: {{.KubeletPort}}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: {{.KubeletHealthzPort}}
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: {{.ClientCA}}
authorization:
  mode: Webhook
clusterDNS: [{{.Gateway}}]
clusterDomain: {{.ClusterDomain}}
resolvConf: ""
containerRuntimeEndpoint: {{.RuntimeEndpoint}}
cgroupDriver: cgroupfs
cgroupRoot: {{.CgroupRoot}}
# This machine mounts cgroup v1.
failCgroupV1: false
failSwapOn: false
podLogsDir: {{.PodLogs}}
# The kubelet would refuse to start on this machine's kernel settings with
# true; with false it sets the few it needs (vm.overcommit_memory,
# kernel.panic, kernel.panic_on_oops).
protectKernelDefaults: false
serializeImagePulls: false
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
registerWithTaints:
  - key: {{.Taint}}
    value: "true"
    effect: NoSchedule
nodeStatusUpdateFrequency: 5s
syncFrequency: 10s
`)
