package devcluster

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/ringfire/ringfire/internal/certs"
)

// credentialFiles are the paths the components' flags point at.
type credentialFiles struct {
	caCert, caKey           string
	servingCert, servingKey string
	saPrivate, saPublic     string
	tokens                  string
	kcmKubeconfig           string
	kwokKubeconfig          string
	schedulerKubeconfig     string
	stages                  string

	// The real node's identities (Options.RealNode).
	nodeKubeletKubeconfig, nodeProxyKubeconfig, nodeDNSKubeconfig string
	kubeletClientCert, kubeletClientKey                           string
}

// writeCredentials generates the cluster's CA, the API server's serving
// certificate, the service-account key pair, a static admin token and one
// client identity per component, and writes them with the kubeconfigs.
func (c *Cluster) writeCredentials() (credentialFiles, error) {
	pki := filepath.Join(c.dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return credentialFiles{}, err
	}
	files := credentialFiles{
		caCert:              filepath.Join(pki, "ca.crt"),
		caKey:               filepath.Join(pki, "ca.key"),
		saPrivate:           filepath.Join(pki, "service-account.key"),
		saPublic:            filepath.Join(pki, "service-account.pub"),
		tokens:              filepath.Join(pki, "tokens.csv"),
		kcmKubeconfig:       filepath.Join(c.dir, "kube-controller-manager.kubeconfig"),
		kwokKubeconfig:      filepath.Join(c.dir, "kwok.kubeconfig"),
		schedulerKubeconfig: filepath.Join(c.dir, "kube-scheduler.kubeconfig"),
		stages:              filepath.Join(c.dir, "kwok-stages.yaml"),

		nodeKubeletKubeconfig: filepath.Join(c.dir, "kubelet.kubeconfig"),
		nodeProxyKubeconfig:   filepath.Join(c.dir, "kube-proxy.kubeconfig"),
		nodeDNSKubeconfig:     filepath.Join(c.dir, "coredns.kubeconfig"),
	}
	ca, err := certs.NewAuthority("ringfire-e2e-ca", certLifetime)
	if err != nil {
		return files, err
	}
	caPEM := ca.CertPEM
	if err := os.WriteFile(files.caCert, caPEM, 0o644); err != nil {
		return files, err
	}
	if err := os.WriteFile(files.caKey, ca.KeyPEM, 0o600); err != nil {
		return files, err
	}

	apiServing, err := serving(ca, "kube-apiserver",
		"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
		"127.0.0.1", serviceIP, nodeGateway)
	if err != nil {
		return files, err
	}
	if files.servingCert, files.servingKey, err = writeKeyPair(pki, "kube-apiserver", apiServing); err != nil {
		return files, err
	}

	saPriv, saPub, err := serviceAccountKeys()
	if err != nil {
		return files, err
	}
	if err := os.WriteFile(files.saPrivate, saPriv, 0o600); err != nil {
		return files, err
	}
	if err := os.WriteFile(files.saPublic, saPub, 0o644); err != nil {
		return files, err
	}

	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return files, err
	}
	c.adminToken = hex.EncodeToString(token)
	// token,user,uid,"group,..." — the API server's static token file format.
	line := fmt.Sprintf("%s,ringfire-admin-token,ringfire-admin-token,\"system:masters\"\n", c.adminToken)
	if err := os.WriteFile(files.tokens, []byte(line), 0o600); err != nil {
		return files, err
	}

	identities := []struct {
		path   string
		user   string
		groups []string
		admin  bool
	}{
		{filepath.Join(c.dir, "admin.kubeconfig"), "ringfire-admin", []string{"system:masters"}, true},
		// The controller manager's own identity; each controller then uses its
		// service account (--use-service-account-credentials).
		{files.kcmKubeconfig, "system:kube-controller-manager", nil, false},
		// The identity the API server's bootstrap RBAC grants kube-scheduler.
		{files.schedulerKubeconfig, "system:kube-scheduler", nil, false},
		// kwok plays every kubelet and needs to write any node's status and
		// delete any pod, which the Node authorizer would not allow one user.
		{files.kwokKubeconfig, "kwok", []string{"system:masters"}, false},
	}
	if c.opts.RealNode {
		identities = append(identities, []struct {
			path   string
			user   string
			groups []string
			admin  bool
		}{
			// The Node authorizer's form: the kubelet may touch its own node
			// and the objects of its pods only.
			{files.nodeKubeletKubeconfig, "system:node:" + RealNodeName, []string{"system:nodes"}, false},
			// The identity bootstrap RBAC grants kube-proxy.
			{files.nodeProxyKubeconfig, "system:kube-proxy", nil, false},
			// CoreDNS reads Services, EndpointSlices, pods and namespaces.
			{files.nodeDNSKubeconfig, "ringfire-coredns", []string{"system:masters"}, false},
		}...)
		kp, err := client(ca, "kube-apiserver-kubelet-client", "system:masters")
		if err != nil {
			return files, err
		}
		if files.kubeletClientCert, files.kubeletClientKey, err = writeKeyPair(pki, "kube-apiserver-kubelet-client", kp); err != nil {
			return files, err
		}
	}
	for _, id := range identities {
		kp, err := client(ca, id.user, id.groups...)
		if err != nil {
			return files, err
		}
		if err := writeKubeconfig(id.path, c.serverURL, caPEM, kp); err != nil {
			return files, err
		}
		if id.admin {
			c.kubeconfig = id.path
			c.restConfig = restConfigFor(c.serverURL, caPEM, kp)
			cs, err := kubernetes.NewForConfig(c.restConfig)
			if err != nil {
				return files, fmt.Errorf("admin clientset: %w", err)
			}
			c.clientset = cs
		}
	}
	return files, nil
}

func (c *Cluster) bin(name Component) string {
	return filepath.Join(c.opts.ToolsBin, string(name))
}

func (c *Cluster) etcdArgs(peerPort int) []string {
	peerURL := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(peerPort))
	return []string{
		c.bin(Etcd),
		"--name=ringfire-e2e",
		"--data-dir=" + filepath.Join(c.dir, "etcd-data"),
		"--listen-client-urls=" + c.etcdURL,
		"--advertise-client-urls=" + c.etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=ringfire-e2e=" + peerURL,
		"--initial-cluster-state=new",
		// A throw-away cluster: durability across power loss buys nothing and
		// fsync dominates write latency on a shared test machine.
		"--unsafe-no-fsync=true",
		"--quota-backend-bytes=" + strconv.FormatInt(8<<30, 10),
		"--log-level=warn",
	}
}

func (c *Cluster) apiServerArgs(port int, f credentialFiles) []string {
	args := []string{
		c.bin(APIServer),
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=" + c.serverHost(),
		"--advertise-address=" + c.serverHost(),
		// The `kubernetes` Service may not point at loopback, and without a
		// real node nothing in this cluster dials it: then its endpoints are
		// left alone. With one, they are the bridge address.
		"--endpoint-reconciler-type=" + c.endpointReconciler(),
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + f.servingCert,
		"--tls-private-key-file=" + f.servingKey,
		"--client-ca-file=" + f.caCert,
		"--token-auth-file=" + f.tokens,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + f.saPublic,
		"--service-account-signing-key-file=" + f.saPrivate,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--allow-privileged=true",
		"--profiling=false",
	}
	if c.opts.RealNode {
		// `kubectl logs` and exec of the real node's pods.
		args = append(args, "--kubelet-client-certificate="+f.kubeletClientCert, "--kubelet-client-key="+f.kubeletClientKey,
			"--kubelet-preferred-address-types=InternalIP")
	}
	return args
}

// serverHost is the address the API server listens on: loopback, or the
// real node's bridge address, which pods reach and loopback clients too.
func (c *Cluster) serverHost() string {
	if c.opts.RealNode {
		return nodeGateway
	}
	return "127.0.0.1"
}

func (c *Cluster) endpointReconciler() string {
	if c.opts.RealNode {
		return "lease"
	}
	return "none"
}

func (c *Cluster) controllerManagerArgs(f credentialFiles) []string {
	return []string{
		c.bin(ControllerManager),
		"--kubeconfig=" + f.kcmKubeconfig,
		"--authentication-kubeconfig=" + f.kcmKubeconfig,
		"--authorization-kubeconfig=" + f.kcmKubeconfig,
		// No serving port: nothing scrapes it, and a fixed port would collide
		// between clusters.
		"--secure-port=0",
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + f.saPrivate,
		"--root-ca-file=" + f.caCert,
		"--cluster-signing-cert-file=" + f.caCert,
		"--cluster-signing-key-file=" + f.caKey,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--kube-api-qps=200",
		"--kube-api-burst=400",
		"--profiling=false",
	}
}

func (c *Cluster) schedulerArgs(f credentialFiles) []string {
	return []string{
		c.bin(Scheduler),
		"--kubeconfig=" + f.schedulerKubeconfig,
		"--authentication-kubeconfig=" + f.schedulerKubeconfig,
		"--authorization-kubeconfig=" + f.schedulerKubeconfig,
		"--secure-port=0",
		"--leader-elect=false",
		"--profiling=false",
	}
}

func (c *Cluster) kwokArgs(f credentialFiles) []string {
	return []string{
		c.bin(KWOK),
		"--kubeconfig=" + f.kwokKubeconfig,
		"--config=" + f.stages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KWOKNodeAnnotation + "=fake",
		"--node-ip=127.0.0.1",
		"--cidr=" + podCIDR,
		"--node-lease-duration-seconds=40",
	}
}

// renderStages fills the default pod duration and the command player
// (play.jq) into the embedded stage file, and adds KWOK's own configuration
// when podParallelism is set.
func renderStages(defaultDuration time.Duration, podParallelism int) []byte {
	ms := strconv.FormatInt(defaultDuration.Milliseconds(), 10)
	out := strings.ReplaceAll(stagesYAML, "__DEFAULT_DURATION_MS__", ms)
	out = strings.ReplaceAll(out, "__PLAY__", "("+playProgram()+")")
	if podParallelism > 0 {
		// KWOK defaults none of the options of a configuration it is given:
		// each is spelled out with KWOK's default but the one changed.
		out += fmt.Sprintf(`---
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: %d
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 1
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
  enableDebuggingHandlers: true
  enableProfilingHandler: true
  enableContentionProfiling: false
`, podParallelism)
	}
	return []byte(out)
}

// playProgram is play.jq on one line, its comments dropped: it goes into
// single-quoted YAML strings, where a line break would fold into a space and
// a comment would swallow the rest of the program.
func playProgram() string {
	var parts []string
	for line := range strings.Lines(playJQ) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts = append(parts, line)
	}
	return strings.ReplaceAll(strings.Join(parts, " "), "'", "''")
}
