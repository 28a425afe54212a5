package devcluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWriteNodeFiles renders the real node's configurations with fixed inputs
// and compares them, byte for byte, with nodeFilesGolden (the output of the
// fmt.Sprintf templates the text/template ones replaced). The cluster
// directory is written <dir>.
func TestWriteNodeFiles(t *testing.T) {
	dir := t.TempDir()
	c := &Cluster{dir: dir, opts: Options{ToolsBin: "/tools"}, argv: map[Component][]string{}}
	f := credentialFiles{
		caCert:                "/creds/ca.crt",
		nodeKubeletKubeconfig: "/creds/kubelet.kubeconfig",
		nodeProxyKubeconfig:   "/creds/proxy.kubeconfig",
		nodeDNSKubeconfig:     "/creds/dns.kubeconfig",
	}
	if err := c.writeNodeFiles(f, []int{10250, 10248, 10256, 10249, 8181}); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		got[rel] = strings.ReplaceAll(string(data), dir, "<dir>")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range nodeFilesGolden {
		if got[name] != want {
			t.Errorf("%s:\n%s\nwant:\n%s", name, got[name], want)
		}
	}
	for name := range got {
		if _, ok := nodeFilesGolden[name]; !ok {
			t.Errorf("unexpected file %s", name)
		}
	}
	for comp, want := range nodeArgvGolden {
		var argv []string
		for _, a := range c.argv[comp] {
			argv = append(argv, strings.ReplaceAll(a, dir, "<dir>"))
		}
		if !slices.Equal(argv, want) {
			t.Errorf("%s argv = %q, want %q", comp, argv, want)
		}
	}
	if len(c.argv) != len(nodeArgvGolden) {
		t.Errorf("argv of %d components, want %d", len(c.argv), len(nodeArgvGolden))
	}
}

var nodeArgvGolden = map[Component][]string{
	Containerd: {"/tools/containerd", "--config=<dir>/node/containerd.toml", "--log-level=warn"},
	CoreDNS:    {"/tools/coredns", "-conf=<dir>/node/Corefile"},
	KubeProxy:  {"/tools/kube-proxy", "--config=<dir>/node/kube-proxy.yaml", "--v=1"},
	Kubelet: {"/tools/kubelet", "--config=<dir>/node/kubelet.yaml", "--kubeconfig=/creds/kubelet.kubeconfig",
		"--root-dir=<dir>/node/kubelet", "--hostname-override=ringfire-node", "--node-ip=10.244.0.1",
		"--node-labels=ringfire.io/real-node=true", "--v=1"},
}

var nodeFilesGolden = map[string]string{
	"node/Corefile": `.:53 {
    bind 10.244.0.1
    ready 127.0.0.1:8181
    errors
    cache 5
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig /creds/dns.kubeconfig
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
}
`,
	"node/cni/10-ringfire.conflist": `{
  "cniVersion": "1.0.0",
  "name": "ringfire",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "ringfire0",
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "10.244.0.0/24", "rangeEnd": "10.244.0.250", "gateway": "10.244.0.1"}]],
        "routes": [{"dst": "0.0.0.0/0", "gw": "10.244.0.1"}],
        "dataDir": "<dir>/node/ipam"
      }
    }
  ]
}
`,
	"node/containerd.toml": `version = 3
root = "<dir>/node/containerd"
state = "<dir>/node/run"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "<dir>/node/run/containerd.sock"

[plugins."io.containerd.cri.v1.runtime"]
  enable_selinux = false
  # This machine lacks CAP_SYS_RESOURCE: no negative oom_score_adj.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      runtime_path = "/tools/containerd-shim-runc-v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "<dir>/node/cni"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "ringfire.local/pause:1"
`,
	"node/kube-proxy.yaml": `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: /creds/proxy.kubeconfig
hostnameOverride: ringfire-node
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
mode: iptables
clusterCIDR: 10.244.0.0/24
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`,
	"node/kubelet.yaml": `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 10.244.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: /creds/ca.crt
authorization:
  mode: Webhook
clusterDNS: [10.244.0.1]
clusterDomain: cluster.local
resolvConf: ""
containerRuntimeEndpoint: unix://<dir>/node/run/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: /ringfire-node
# This machine mounts cgroup v1.
failCgroupV1: false
failSwapOn: false
podLogsDir: <dir>/node/pod-logs
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
  - key: ringfire.io/real-node
    value: "true"
    effect: NoSchedule
nodeStatusUpdateFrequency: 5s
syncFrequency: 10s
`,
	"node/resolv.conf": ``,
}
