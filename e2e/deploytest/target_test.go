package deploytest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/internal/devcluster"
)

// The environment that picks the cluster.
const (
	// NodeEnv=1 runs the suite on the local control plane with a real node
	// (root; e2e/node/build.sh's tools in $RINGFIRE_TOOLS_BIN): the suite
	// builds the images, loads them into the node and applies deploy/ itself.
	NodeEnv = "RINGFIRE_NODE"
	// KubeconfigEnv names a cluster where ringfire is deployed already
	// (e2e/kind/run.sh does so on kind); NamespaceEnv its namespace, default
	// ringfire-system. KubectlEnv is the kubectl to use, default the one on PATH.
	KubeconfigEnv = "RINGFIRE_DEPLOY_KUBECONFIG"
	NamespaceEnv  = "RINGFIRE_DEPLOY_NAMESPACE"
	KubectlEnv    = "RINGFIRE_KUBECTL"
	// DeployViaEnv picks how the local run installs ringfire: "kustomize"
	// (the default: the CRDs, then `kubectl apply -k` of localOverlay) or
	// "helm" (`helm install` of charts/ringfire with helmValues, the CRDs,
	// admission policies and Queues included). Not read with KubeconfigEnv.
	DeployViaEnv = "RINGFIRE_DEPLOY_VIA"
)

// target is the cluster the suite runs against, reached through its API
// server only.
type target struct {
	kube       kubernetes.Interface
	vc         vcclient.Interface
	cfg        *rest.Config
	kubeconfig string
	kubectl    string
	ns         string // ringfire's and its etcd's namespace
	local      *cluster.Cluster
	// via is how the local run installed ringfire: kustomize or helm.
	via string
	// helm runs the pinned helm against the target (via helm).
	helm func(t *testing.T, args ...string) string
	// kwokSelector places the load's pods on the fake nodes.
	kwokSelector map[string]string
}

// repoRoot is the checkout this file is in.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// openTarget returns the cluster to run against, or skips the test.
func openTarget(t *testing.T) *target {
	t.Helper()
	if kc := os.Getenv(KubeconfigEnv); kc != "" {
		return external(t, kc)
	}
	if os.Getenv(NodeEnv) != "1" {
		t.Skipf("set %s=1 (a real node on this machine, as root, with e2e/node/build.sh's tools) or %s (a cluster ringfire is deployed in) to run the deployment suite", NodeEnv, KubeconfigEnv)
	}
	return upLocal(t)
}

func external(t *testing.T, kubeconfig string) *target {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	tg := &target{cfg: cfg, kubeconfig: kubeconfig, ns: os.Getenv(NamespaceEnv), kubectl: os.Getenv(KubectlEnv),
		kwokSelector: map[string]string{"type": "kwok"}}
	if tg.ns == "" {
		tg.ns = "ringfire-system"
	}
	if tg.kubectl == "" {
		tg.kubectl = "kubectl"
	}
	tg.clients(t)
	return tg
}

func (tg *target) clients(t *testing.T) {
	tg.cfg.QPS, tg.cfg.Burst = 100, 200
	var err error
	if tg.kube, err = kubernetes.NewForConfig(tg.cfg); err != nil {
		t.Fatal(err)
	}
	if tg.vc, err = vcclient.NewForConfig(tg.cfg); err != nil {
		t.Fatal(err)
	}
}

// upLocal starts the local control plane with four KWOK nodes and the real
// node, builds ringfire's and etcd's images and loads them into the node,
// installs the CRDs and the etcd certificates, makes the etcd members'
// volumes, and applies deploy/ through the single-node overlay and a few
// local changes (localOverlay), as a user would with kubectl.
func upLocal(t *testing.T) *target {
	tools := cluster.RequireTools(t)
	via := os.Getenv(DeployViaEnv)
	switch via {
	case "":
		via = "kustomize"
	case "kustomize", "helm":
	default:
		t.Fatalf("%s=%q: kustomize or helm", DeployViaEnv, via)
	}
	if via == "helm" {
		if _, err := os.Stat(filepath.Join(tools, "helm")); err != nil {
			t.Fatalf("%s=helm: no helm in %s (e2e/tools/build.sh builds it): %v", DeployViaEnv, tools, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := cluster.StartForTest(t, cluster.Options{Nodes: 4, RealNode: true, ToolsBin: tools, DefaultPodDuration: time.Second})
	tg := &target{cfg: c.RESTConfig(), kubeconfig: c.Kubeconfig(), kubectl: filepath.Join(tools, "kubectl"),
		ns: "ringfire-system", local: c, via: via, kwokSelector: map[string]string{"type": "kwok"}}
	tg.clients(t)
	tg.helm = helmRunner(filepath.Join(tools, "helm"), c.Kubeconfig(), t.TempDir())

	images := filepath.Join(c.Dir(), "images")
	start := time.Now()
	out, err := exec.CommandContext(ctx, filepath.Join(repoRoot(), "e2e", "node", "images.sh"), images).Output()
	if err != nil {
		t.Fatalf("e2e/node/images.sh: %v\n%s", err, stderrOf(err))
	}
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		ref, archive, _ := strings.Cut(line, " ")
		if err := c.LoadImage(ctx, archive); err != nil {
			t.Fatal(err)
		}
		name, _, _ := strings.Cut(ref, ":")
		refs[filepath.Base(name)] = ref
	}
	t.Logf("images %v built and loaded into the node in %v", refs, time.Since(start).Round(time.Second))

	if via == "kustomize" {
		// As docs/operations.md installs them; Helm installs the chart's own.
		if err := crds.Install(ctx, tg.cfg); err != nil {
			t.Fatal(err)
		}
	}
	tg.kubectlRun(t, "create", "namespace", tg.ns)
	// The etcd TLS Secrets, as docs/operations.md tells a user to make them.
	certs, err := exec.CommandContext(ctx, filepath.Join(images, "ringfire"), "certs", "--namespace", tg.ns).Output()
	if err != nil {
		t.Fatalf("ringfire certs: %v\n%s", err, stderrOf(err))
	}
	tg.kubectlStdin(t, certs, "apply", "-f", "-")
	tg.etcdVolumes(t, 3)
	start = time.Now()
	if via == "helm" {
		values := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(values, []byte(helmValues(refs["ringfire"], refs["etcd"])), 0o644); err != nil {
			t.Fatal(err)
		}
		out := tg.helm(t, "install", "ringfire", filepath.Join(repoRoot(), "charts", "ringfire"), "--namespace", tg.ns, "--values", values)
		t.Logf("helm install of charts/ringfire took %v; it says:\n%s", time.Since(start).Round(time.Millisecond), out)
		return tg
	}
	overlay := localOverlay(t, refs["ringfire"], refs["etcd"])
	tg.kubectlRun(t, "apply", "-k", overlay)
	t.Logf("kubectl apply -k of the local overlay took %v", time.Since(start).Round(time.Millisecond))
	return tg
}

// helmRunner runs helm against kubeconfig with its configuration, cache and
// data under home, so that it reads and writes nothing of the user's.
func helmRunner(helm, kubeconfig, home string) func(t *testing.T, args ...string) string {
	return func(t *testing.T, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, helm, append(args, "--kubeconfig", kubeconfig)...)
		cmd.Env = cluster.HelmEnv(home)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
}

// helmValues are the chart's values that say what localOverlay says: the
// images just built, all three etcd members on the one node (anti-affinity
// preferred, as deploy/overlays/single-node), both StatefulSets on the real
// node (selector and toleration), CPU requests of 50m, and ringfire's gang
// scheduler beside the default controllers.
func helmValues(ringfireRef, etcdRef string) string {
	rfName, rfTag, _ := strings.Cut(ringfireRef, ":")
	etcdName, etcdTag, _ := strings.Cut(etcdRef, ":")
	return fmt.Sprintf(`image: {repository: %s, tag: %s}
nodeSelector: {%s: "true"}
tolerations: [{key: %s, operator: Exists, effect: NoSchedule}]
resources: {requests: {cpu: 50m}}
scheduler: {enabled: true}
etcd:
  image: {repository: %s, tag: %s}
  antiAffinity: preferred
  resources: {requests: {cpu: 50m}}
`, rfName, rfTag, devcluster.RealNodeLabel, devcluster.RealNodeTaint, etcdName, etcdTag)
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// etcdVolumes makes n hostPath PersistentVolumes on the real node for the
// etcd members' claims: the local cluster has no storage provisioner (kind
// has one; there this is not needed).
func (tg *target) etcdVolumes(t *testing.T, n int) {
	ctx := context.Background()
	for i := range n {
		dir := filepath.Join(tg.local.Dir(), "node", "volumes", fmt.Sprintf("etcd-%d", i))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 65532, 65532); err != nil { // the members' user, as in deploy/etcd
			t.Fatal(err)
		}
		dirType := corev1.HostPathDirectory
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ringfire-node-etcd-%d", i)},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource: corev1.PersistentVolumeSource{
					HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &dirType},
				},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{devcluster.RealNodeName},
					}}}},
				}},
			},
		}
		if _, err := tg.kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// localOverlay writes the kustomization the local cluster applies:
// deploy/overlays/single-node, with the images just built, both StatefulSets
// placed on the real node (selector and toleration: the KWOK nodes cannot run
// them), CPU requests a 2-core machine can give five replicas and three
// members, and ringfire's gang scheduler on with its ClusterRole
// (components/gang-scheduler; the local cluster has no vc-scheduler).
func localOverlay(t *testing.T, ringfireRef, etcdRef string) string {
	dir := t.TempDir()
	base, err := filepath.Rel(dir, filepath.Join(repoRoot(), "deploy", "overlays", "single-node"))
	if err != nil {
		t.Fatal(err)
	}
	scheduler, err := filepath.Rel(dir, filepath.Join(repoRoot(), "deploy", "components", "gang-scheduler"))
	if err != nil {
		t.Fatal(err)
	}
	rfName, rfTag, _ := strings.Cut(ringfireRef, ":")
	etcdName, etcdTag, _ := strings.Cut(etcdRef, ":")
	k := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
components:
  - %s
images:
  - name: ghcr.io/ringfire/ringfire
    newName: %s
    newTag: %s
  - name: quay.io/coreos/etcd
    newName: %s
    newTag: %s
patches:
  - target: {kind: StatefulSet}
    patch: |-
      - op: add
        path: /spec/template/spec/nodeSelector
        value: {%s: "true"}
      - op: add
        path: /spec/template/spec/tolerations
        value: [{key: %s, operator: Exists, effect: NoSchedule}]
      - op: replace
        path: /spec/template/spec/containers/0/resources/requests/cpu
        value: 50m
`, base, scheduler, rfName, rfTag, etcdName, etcdTag, devcluster.RealNodeLabel, devcluster.RealNodeTaint)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// kubectlRun runs kubectl against the target and fails the test on an error.
func (tg *target) kubectlRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := tg.kubectlTry(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (tg *target) kubectlStdin(t *testing.T, stdin []byte, args ...string) {
	t.Helper()
	cmd := exec.Command(tg.kubectl, append([]string{"--kubeconfig", tg.kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(string(stdin))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// kubectlTry runs kubectl with a time bound and returns its output.
func (tg *target) kubectlTry(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tg.kubectl, append([]string{"--kubeconfig", tg.kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}
