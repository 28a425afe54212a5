package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/ringfire/ringfire/deploy"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/internal/replica"
)

// chartDir is the Helm chart, charts/ringfire. Its templates are written by hand and must render
// what the kustomize base and its overlays render (TestChartMatchesKustomize); what it takes
// verbatim from deploy/ is copied there by `make chart` (TestChartCopiesAreDeploys).
const chartDir = "../charts/ringfire"

// The files the chart holds as copies of deploy/'s: the CRDs in crds/ (Helm installs them before
// anything else), and under files/deploy/ the admission policies and Queues, the ClusterRole's
// rules, the alerts and the dashboard. Each must be byte for byte its original, and every CRD and
// every other object of deploy/crds must have its copy.
func TestChartCopiesAreDeploys(t *testing.T) {
	crdFiles, err := filepath.Glob("crds/*.volcano.sh_*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	all, err := filepath.Glob("crds/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pairs := map[string]string{} // copy => original
	for _, f := range all {
		switch {
		case filepath.Base(f) == "kustomization.yaml":
		case slices.Contains(crdFiles, f):
			pairs[filepath.Join(chartDir, "crds", filepath.Base(f))] = f
		default:
			pairs[filepath.Join(chartDir, "files/deploy", f)] = f
		}
	}
	for _, f := range []string{"ringfire/10-rbac.yaml", deploy.SchedulerDir + "/scheduler-rbac.yaml", "monitoring/prometheusrule.yaml", "monitoring/grafana-dashboard.json"} {
		pairs[filepath.Join(chartDir, "files/deploy", f)] = f
	}
	for cp, orig := range pairs {
		want, err := os.ReadFile(orig)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(cp)
		if err != nil {
			t.Errorf("%v: run `make chart`", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not deploy/%s: run `make chart`", cp, orig)
		}
	}
	// Nothing more: a file deleted from deploy/ goes from the chart too.
	var extra []string
	for _, dir := range []string{"crds", "files"} {
		err := filepath.WalkDir(filepath.Join(chartDir, dir), func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && pairs[path] == "" {
				extra = append(extra, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(extra) > 0 {
		t.Errorf("the chart holds copies of no file of deploy/: %v (run `make chart`)", extra)
	}
}

// The chart's fallback list of controllers (scheduler.enabled with none named) is ringfire's
// default set.
func TestChartDefaultControllers(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(chartDir, "templates/_helpers.tpl"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join(replica.DefaultControllers(), ",")
	if !strings.Contains(string(text), "define \"ringfire.defaultControllers\" -}}\n"+want+"\n") {
		t.Errorf("ringfire.defaultControllers of _helpers.tpl is not ringfire's default set %s", want)
	}
}

// A values file per kustomization: with it the chart renders what `kubectl kustomize` renders of
// the kustomization and of the CRDs' kustomization beside it, less the Namespace (the chart's
// namespace is the release's, made by `helm install --create-namespace`).
type chartCase struct {
	name, kustomization, crds, namespace, values string
	// envMoved: kustomize's strategic merge patch moves the env variable it sets to the front of
	// the list; the chart keeps it in place. Compared without their order.
	envMoved bool
}

var chartCases = []chartCase{
	{name: "base", kustomization: ".", crds: "crds", namespace: "ringfire-system"},
	{name: "production", kustomization: "overlays/production", crds: "crds", namespace: "batch-system", values: `
image: {repository: registry.example.com/platform/ringfire, tag: v0.1.0}
replicas: 5
priorityClassName: system-cluster-critical
resources:
  requests: {cpu: "2", memory: 2Gi}
  limits: {memory: 4Gi}
`},
	{name: "external-etcd", kustomization: "overlays/external-etcd", crds: "crds", namespace: "ringfire-system", values: `
etcd:
  enabled: false
  external:
    endpoints: [https://etcd-a.example.com:2379, https://etcd-b.example.com:2379, https://etcd-c.example.com:2379]
  clientSecretName: ringfire-etcd-client-external
`, envMoved: true},
	{name: "single-node", kustomization: "overlays/single-node", crds: "crds", namespace: "ringfire-system", values: `
etcd: {antiAffinity: preferred}
`},
	{name: "monitoring", kustomization: "overlays/monitoring", crds: "crds", namespace: "ringfire-system", values: `
monitoring: {enabled: true}
`},
	{name: "crds-before-1.36", kustomization: ".", crds: "overlays/crds-before-1.36", namespace: "ringfire-system", values: `
volcano: {mutatingAdmissionPolicies: false}
`},
	{name: "gang-scheduler", kustomization: "overlays/gang-scheduler", crds: "crds", namespace: "ringfire-system", values: `
scheduler: {enabled: true}
`},
}

// The chart and the kustomize base are one deployment: for each kustomization, the chart with
// the matching values renders the same objects, field for field. The one difference allowed is
// the Queues' helm.sh/resource-policy: keep.
func TestChartMatchesKustomize(t *testing.T) {
	kubectl := requireKubectl(t)
	helm := requireHelm(t)
	for _, o := range kustomizations {
		if strings.HasPrefix(o, "overlays/") && !slices.ContainsFunc(chartCases, func(c chartCase) bool {
			return c.kustomization == o || c.crds == o
		}) {
			t.Errorf("overlay %s has no case in chartCases", o)
		}
	}
	// Each kustomization rendered once: deploy/crds alone is a megabyte of YAML.
	renders := map[string][]*unstructured.Unstructured{}
	rendered := func(t *testing.T, dir string) []*unstructured.Unstructured {
		if renders[dir] == nil {
			renders[dir] = render(t, kubectl, dir)
		}
		var out []*unstructured.Unstructured
		for _, o := range renders[dir] {
			out = append(out, o.DeepCopy())
		}
		return out
	}
	files := crdsFiles(t)
	for _, c := range chartCases {
		t.Run(c.name, func(t *testing.T) {
			var want []*unstructured.Unstructured
			for _, o := range rendered(t, c.kustomization) {
				if o.GetKind() != "Namespace" {
					want = append(want, o)
				}
			}
			// Of deploy/crds, kustomize says which objects; their content is the files' as Go's
			// YAML decoder reads them (and the API server gets them from crds.Install): kustomize's
			// kyaml reads a folded scalar's more-indented line with one more line break, which
			// changes no CEL expression but every comparison. The CRDs are left out: the chart's
			// crds/ are copies of deploy/crds's, byte for byte (TestChartCopiesAreDeploys), and
			// `helm template` renders them only with --include-crds, verbatim.
			for _, o := range rendered(t, c.crds) {
				if o.GetKind() == "CustomResourceDefinition" {
					continue
				}
				f := find(files, o.GetKind(), o.GetName())
				if f == nil {
					t.Fatalf("%s %s of %s is in no file of deploy/crds", o.GetKind(), o.GetName(), c.crds)
				}
				want = append(want, f)
			}
			got := helmTemplate(t, helm, c.namespace, c.values)
			for _, o := range got {
				if o.GetKind() == "Queue" {
					a := o.GetAnnotations()
					if a["helm.sh/resource-policy"] != "keep" {
						t.Errorf("Queue %s is not kept on uninstall", o.GetName())
					}
					delete(a, "helm.sh/resource-policy")
					if len(a) == 0 {
						a = nil
					}
					o.SetAnnotations(a)
				}
			}
			if c.envMoved {
				for _, o := range append(slices.Clone(got), want...) {
					sortEnv(t, o)
				}
			}
			compareObjects(t, got, want)
		})
	}
}

// sortEnv sorts the env variables of a StatefulSet's containers by name.
func sortEnv(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	if o.GetKind() != "StatefulSet" {
		return
	}
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		env, _ := c.(map[string]any)["env"].([]any)
		slices.SortFunc(env, func(a, b any) int {
			return strings.Compare(a.(map[string]any)["name"].(string), b.(map[string]any)["name"].(string))
		})
	}
	if err := unstructured.SetNestedSlice(o.Object, cs, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
}

// crdsFiles decodes every object of deploy/crds's files.
func crdsFiles(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob("crds/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			err := dec.Decode(&obj.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(obj.Object) > 0 {
				out = append(out, obj)
			}
		}
	}
	return out
}

// compareObjects fails for each object of want that got lacks or renders otherwise, and for each
// object of got that want lacks.
func compareObjects(t *testing.T, got, want []*unstructured.Unstructured) {
	t.Helper()
	key := func(o *unstructured.Unstructured) string {
		return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
	}
	gotBy := map[string]*unstructured.Unstructured{}
	for _, o := range got {
		gotBy[key(o)] = o
	}
	for _, w := range want {
		g := gotBy[key(w)]
		delete(gotBy, key(w))
		if g == nil {
			t.Errorf("the chart lacks %s", key(w))
			continue
		}
		if !reflect.DeepEqual(g.Object, w.Object) {
			gy, _ := yaml.Marshal(g.Object)
			wy, _ := yaml.Marshal(w.Object)
			t.Errorf("%s: the chart renders\n%s\nkustomize\n%s", key(w), firstDiff(string(gy), string(wy)), firstDiff(string(wy), string(gy)))
		}
	}
	for k := range gotBy {
		t.Errorf("the chart renders %s, kustomize does not", k)
	}
}

// firstDiff is a's lines around the first that b does not have at the same place.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range al {
		if i >= len(bl) || al[i] != bl[i] {
			return strings.Join(al[max(0, i-3):min(len(al), i+4)], "\n")
		}
	}
	return "(a prefix of the other)"
}

// The values that have no kustomize overlay: each turns into the flag or field it says, and
// `helm lint --strict` passes with them as with the defaults.
func TestChartValues(t *testing.T) {
	helm := requireHelm(t)
	values := `
replicas: 4
kubeAPI: {qps: 300, burst: 600}
workers: 16
leaseTTL: 10s
drainTimeout: 8s
etcdPrefix: /ring-b
logLevel: debug
scheduler: {enabled: true, name: ringfire-gang}
extraArgs: [--status-coalesce=2s]
image: {tag: v1.2.3, pullPolicy: IfNotPresent}
nodeSelector: {pool: control}
networkPolicy: {enabled: false}
etcd: {replicas: 5, storage: {size: 8Gi, storageClassName: fast}, image: {tag: v3.6.9}}
volcano: {admissionPolicies: false, queues: false}
`
	for _, v := range []string{"", values, "monitoring: {enabled: true}"} {
		out, err := runHelm(t, helm, nil, append([]string{"lint", "--strict", chartDir}, valuesArgs(t, v)...)...)
		if err != nil {
			t.Errorf("helm lint --strict with values %q: %v\n%s", v, err, out)
		}
	}

	objs := helmTemplate(t, helm, "ringfire-system", values)
	ringfire, etcd := statefulSet(t, objs, "ringfire"), statefulSet(t, objs, "ringfire-etcd")
	for _, want := range []string{
		"--kube-api-qps=300", "--kube-api-burst=600", "--workers=16", "--lease-ttl=10s", "--drain-timeout=8s",
		"--etcd-prefix=/ring-b", "--log-level=debug", "--scheduler-name=ringfire-gang", "--status-coalesce=2s",
		"--controllers=" + strings.Join(replica.DefaultControllers(), ",") + ",scheduler",
	} {
		if !slices.Contains(args(t, ringfire), want) {
			t.Errorf("ringfire's args lack %s: %v", want, args(t, ringfire))
		}
	}
	if got := field(ringfire, "spec", "replicas"); fmt.Sprint(got) != "4" {
		t.Errorf("replicas %v, want 4", got)
	}
	if c := container(t, ringfire); c["image"] != "ghcr.io/ringfire/ringfire:v1.2.3" || c["imagePullPolicy"] != "IfNotPresent" {
		t.Errorf("image %v, pull policy %v", c["image"], c["imagePullPolicy"])
	}
	if got := field(ringfire, "spec", "template", "spec", "nodeSelector", "pool"); got != "control" {
		t.Errorf("nodeSelector pool %v", got)
	}
	if got := env(t, ringfire, "ETCD_ENDPOINTS"); strings.Count(got, "https://") != 5 || !strings.Contains(got, "ringfire-etcd-4.ringfire-etcd.$(POD_NAMESPACE).svc:2379") {
		t.Errorf("ETCD_ENDPOINTS %q, want the five members", got)
	}
	if got := fmt.Sprint(field(etcd, "spec", "replicas")); got != "5" {
		t.Errorf("etcd replicas %s", got)
	}
	if got := container(t, etcd)["image"]; got != "quay.io/coreos/etcd:v3.6.9" {
		t.Errorf("etcd image %v", got)
	}
	var cluster string
	for _, a := range container(t, etcd)["command"].([]any) {
		if s := a.(string); strings.HasPrefix(s, "--initial-cluster=") {
			cluster = s
		}
	}
	if strings.Count(cluster, "=https://") != 5 || !strings.Contains(cluster, "ringfire-etcd-4=https://ringfire-etcd-4.") {
		t.Errorf("etcd %s, want the five members", cluster)
	}
	claims, _, _ := unstructured.NestedSlice(etcd.Object, "spec", "volumeClaimTemplates")
	if c := claims[0].(map[string]any); field(c, "spec", "storageClassName") != "fast" || field(c, "spec", "resources", "requests", "storage") != "8Gi" {
		t.Errorf("etcd's claim %v", c["spec"])
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "NetworkPolicy", "Queue", "ValidatingAdmissionPolicy", "MutatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicyBinding":
			t.Errorf("%s %s rendered, its values turn it off", o.GetKind(), o.GetName())
		}
	}

	// The NOTES of an install on an external etcd under another prefix, with the monitoring
	// (a client-side dry run: no cluster).
	out, err := runHelm(t, helm, nil, append([]string{"install", "ringfire", chartDir, "--namespace", "batch-system", "--dry-run=client"},
		valuesArgs(t, `
etcd: {enabled: false, external: {endpoints: [https://etcd-a.example.com:2379, https://etcd-b.example.com:2379]}, clientSecretName: etcd-client}
etcdPrefix: /ring-b
scheduler: {enabled: true, name: ringfire-gang}
monitoring: {enabled: true}
`)...)...)
	if err != nil {
		t.Fatalf("helm install --dry-run=client: %v\n%s", err, out)
	}
	notesSay(t, out,
		"ringfire (ringfire, revision 1) is in namespace batch-system",
		"controllers: "+strings.Join(replica.DefaultControllers(), ",")+",scheduler\n",
		"places the pods of schedulerName ringfire-gang",
		"the ring's etcd: yours, at https://etcd-a.example.com:2379, https://etcd-b.example.com:2379\n",
		"the etcd TLS Secrets are in batch-system: etcd-client, ringfire's client",
		"--etcd-endpoints=https://etcd-a.example.com:2379,https://etcd-b.example.com:2379 --etcd-ca=",
		"--etcd-key=/etc/ringfire/etcd/tls.key --etcd-prefix=/ring-b\n",
		"the ServiceMonitor ringfire", "the PrometheusRule ringfire", "ConfigMap ringfire-grafana-dashboard",
	)
	if _, notes, _ := strings.Cut(out, "\nNOTES:\n"); strings.Contains(notes, "statefulset/ringfire-etcd") || strings.Contains(notes, "ringfire certs") {
		t.Errorf("the NOTES of an external etcd speak of the in-chart one:\n%s", out)
	}

	// Without an etcd, the chart needs one's endpoints.
	out, err = runHelm(t, helm, nil, append([]string{"template", "ringfire", chartDir}, valuesArgs(t, "etcd: {enabled: false}")...)...)
	if err == nil || !strings.Contains(err.Error(), "etcd.external.endpoints") {
		t.Errorf("no etcd and no endpoints rendered, or failed otherwise: %v\n%s", err, out)
	}
}

// A value of the wrong type, outside its set or misspelt is refused by the chart's
// values.schema.json before anything renders: `helm lint` and `helm template` fail, naming the
// value's path and what it must be.
func TestChartRejectsBadValues(t *testing.T) {
	helm := requireHelm(t)
	for _, tc := range []struct {
		values string
		want   []string // in the error
	}{
		{`replicas: three`, []string{"at '/replicas'", "want integer"}},
		{`replicas: -1`, []string{"at '/replicas'", "minimum"}},
		{`etcd: {antiAffinity: sometimes}`, []string{"at '/etcd/antiAffinity'", "'required'", "'preferred'"}},
		{`replica: 5`, []string{"additional properties 'replica' not allowed"}},
		{`etcd: {replica: 5}`, []string{"at '/etcd'", "additional properties 'replica' not allowed"}},
		{`leaseTTL: 5`, []string{"at '/leaseTTL'", "want string"}},
		{`drainTimeout: 5 seconds`, []string{"at '/drainTimeout'", "does not match pattern"}},
		{`controllers: [job, queue, podgroup, gc]`, []string{"at '/controllers/3'", "'batchjob'", "'scheduler'"}},
		{`image: {pullPolicy: Sometimes}`, []string{"at '/image/pullPolicy'", "'IfNotPresent'"}},
		{`image: {tag: ""}`, []string{"at '/image/tag'"}},
		{`kubeAPI: {qps: -5}`, []string{"at '/kubeAPI/qps'"}},
		{`workers: 0`, []string{"at '/workers'"}},
		{`etcdPrefix: ringfire`, []string{"at '/etcdPrefix'", "does not match pattern"}},
		{`logLevel: loud`, []string{"at '/logLevel'", "'debug'"}},
		{`etcd: {storage: {size: lots}}`, []string{"at '/etcd/storage/size'"}},
		{`resources: {requests: {cpu: many}}`, []string{"at '/resources/requests/cpu'"}},
		{`tolerations: [{key: a, operator: Maybe}]`, []string{"at '/tolerations/0/operator'", "'Exists'"}},
		{`etcd: {external: {endpoints: [etcd-a:2379]}}`, []string{"at '/etcd/external/endpoints/0'", "does not match pattern"}},
		{`monitoring: {enabled: "yes"}`, []string{"at '/monitoring/enabled'", "want boolean"}},
		{`scheduler: true`, []string{"at '/scheduler'", "want object"}},
	} {
		args := valuesArgs(t, tc.values)
		for _, cmd := range [][]string{{"lint", chartDir}, {"template", "ringfire", chartDir}} {
			out, err := runHelm(t, helm, nil, append(cmd, args...)...)
			if err == nil {
				t.Errorf("helm %s with %q: passed\n%s", cmd[0], tc.values, out)
				continue
			}
			msg := err.Error() + out // helm lint reports on its standard output
			for _, w := range append([]string{"values don't meet the specifications of the schema"}, tc.want...) {
				if !strings.Contains(msg, w) {
					t.Errorf("helm %s with %q: the error lacks %q:\n%s", cmd[0], tc.values, w, msg)
				}
			}
		}
	}
}

// The schema's controller names are ringfire's: every one it knows, no other.
func TestChartSchemaControllers(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Controllers struct {
				Items struct {
					Enum []string `json:"enum"`
				} `json:"items"`
			} `json:"controllers"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	if got, want := schema.Properties.Controllers.Items.Enum, replica.KnownControllers(); !slices.Equal(got, want) {
		t.Errorf("values.schema.json's controllers are %v, ringfire's %v", got, want)
	}
}

// The chart against a real API server (a control plane of its own: the objects stay for the
// test's end, and other tests' CRDs and Queues must not be there): `helm install`, every
// rendering of chartCases accepted by server-side dry-run, `helm upgrade` to other replicas and
// image tag, `helm uninstall`, after which the CRDs, the Queues and a Volcano Job are still
// there, and `helm install` once more. No pod runs: the control plane has no node.
func TestChartInstallUpgradeUninstall(t *testing.T) {
	helm := requireHelm(t)
	c := cluster.StartForTest(t, cluster.Options{Nodes: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	client, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	kube := []string{"--kubeconfig", c.Kubeconfig()}
	const ns = "ringfire-system"
	stsGVR := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	statefulSetOf := func(name string) *unstructured.Unstructured {
		t.Helper()
		s, err := client.Resource(stsGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("StatefulSet %s: %v", name, err)
		}
		return s
	}

	start := time.Now()
	out, err := runHelm(t, helm, kube, "install", "ringfire", chartDir, "--namespace", ns, "--create-namespace")
	if err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	t.Logf("helm install: %v", time.Since(start).Round(time.Millisecond))
	// The NOTES say what was installed and how to see the ring and its metrics.
	notesSay(t, out,
		"ringfire (ringfire, revision 1) is in namespace ringfire-system",
		"3 replicas of ghcr.io/ringfire/ringfire:latest",
		"controllers: ringfire's default set ("+strings.Join(replica.DefaultControllers(), ",")+")",
		"3 members of quay.io/coreos/etcd:v3.6.8 with TLS, StatefulSet ringfire-etcd (one member per node)",
		"ringfire certs --namespace ringfire-system | kubectl apply -f -",
		"kubectl -n ringfire-system rollout status statefulset/ringfire\n",
		"kubectl -n ringfire-system exec ringfire-0 -c ringfire -- /ringfire ring status --etcd-endpoints=https://ringfire-etcd-0.ringfire-etcd.ringfire-system.svc:2379,https://ringfire-etcd-1.ringfire-etcd.ringfire-system.svc:2379,https://ringfire-etcd-2.ringfire-etcd.ringfire-system.svc:2379 --etcd-ca=/etc/ringfire/etcd/ca.crt --etcd-cert=/etc/ringfire/etcd/tls.crt --etcd-key=/etc/ringfire/etcd/tls.key\n",
		"--clusterrole=ringfire-metrics-reader --serviceaccount=ringfire-system:ringfire-reader",
		"kubectl -n ringfire-system port-forward pod/ringfire-0 8080 &",
	)
	if s := statefulSetOf("ringfire"); fmt.Sprint(field(s, "spec", "replicas")) != "3" || container(t, s)["image"] != "ghcr.io/ringfire/ringfire:latest" {
		t.Errorf("installed ringfire: replicas %v, image %v", field(s, "spec", "replicas"), container(t, s)["image"])
	}
	statefulSetOf("ringfire-etcd")
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crds, err := client.Resource(crdGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crdFiles, _ := filepath.Glob(filepath.Join(chartDir, "crds/*.yaml"))
	if len(crds.Items) != len(crdFiles) {
		t.Errorf("%d CRDs installed, the chart has %d", len(crds.Items), len(crdFiles))
	}
	queueGVR := schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "queues"}
	for _, q := range []string{"root", "default"} {
		if _, err := client.Resource(queueGVR).Get(ctx, q, metav1.GetOptions{}); err != nil {
			t.Errorf("queue %s: %v", q, err)
		}
	}

	// A Volcano Job, admitted by the chart's policies once the API server has loaded them.
	jobGVR := schema.GroupVersionResource{Group: "batch.volcano.sh", Version: "v1alpha1", Resource: "jobs"}
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
		"metadata": map[string]any{"name": "survives-uninstall", "namespace": "default"},
		"spec": map[string]any{"minAvailable": int64(1), "tasks": []any{map[string]any{
			"name": "t", "replicas": int64(1),
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "c", "image": "example.invalid/none"},
			}}},
		}}},
	}}
	var lastErr error
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, lastErr = client.Resource(jobGVR).Namespace("default").Create(ctx, job, metav1.CreateOptions{}); lastErr == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create a Volcano Job: %v", lastErr)
		}
		time.Sleep(500 * time.Millisecond)
	}

	// Every rendering is accepted as it would be applied; the Prometheus Operator's kinds are
	// not served here.
	for _, cs := range chartCases {
		objs := helmTemplate(t, helm, cs.namespace, cs.values)
		var namespaces, rest []*unstructured.Unstructured
		namespaces = append(namespaces, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": cs.namespace},
		}})
		for _, o := range objs {
			if o.GroupVersionKind().Group != "monitoring.coreos.com" {
				rest = append(rest, o)
			}
		}
		if err := deploy.Apply(ctx, c.RESTConfig(), namespaces, false); err != nil {
			t.Fatal(err)
		}
		if err := deploy.Apply(ctx, c.RESTConfig(), rest, true); err != nil {
			t.Errorf("%s: %v", cs.name, err)
			continue
		}
		t.Logf("%s: %d objects accepted (dry-run)", cs.name, len(rest))
	}

	start = time.Now()
	out, err = runHelm(t, helm, kube, "upgrade", "ringfire", chartDir, "--namespace", ns,
		"--set", "replicas=5", "--set", "image.tag=v0.2.0")
	if err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	t.Logf("helm upgrade: %v", time.Since(start).Round(time.Millisecond))
	notesSay(t, out, "(ringfire, revision 2)", "5 replicas of ghcr.io/ringfire/ringfire:v0.2.0")
	if s := statefulSetOf("ringfire"); fmt.Sprint(field(s, "spec", "replicas")) != "5" || container(t, s)["image"] != "ghcr.io/ringfire/ringfire:v0.2.0" {
		t.Errorf("upgraded ringfire: replicas %v, image %v", field(s, "spec", "replicas"), container(t, s)["image"])
	}
	etcdInit, _, _ := unstructured.NestedSlice(statefulSetOf("ringfire-etcd").Object, "spec", "template", "spec", "initContainers")
	if got := etcdInit[0].(map[string]any)["image"]; got != "ghcr.io/ringfire/ringfire:v0.2.0" {
		t.Errorf("upgraded etcd's init container image %v", got)
	}
	if out, err := runHelm(t, helm, kube, "history", "ringfire", "--namespace", ns); err != nil || !strings.Contains(out, "deployed") {
		t.Errorf("helm history: %v\n%s", err, out)
	}

	start = time.Now()
	if out, err := runHelm(t, helm, kube, "uninstall", "ringfire", "--namespace", ns); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	t.Logf("helm uninstall: %v", time.Since(start).Round(time.Millisecond))
	for _, name := range []string{"ringfire", "ringfire-etcd"} {
		_, err := client.Resource(stsGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("StatefulSet %s after uninstall: %v, want not found", name, err)
		}
	}
	crbGVR := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	if _, err := client.Resource(crbGVR).Get(ctx, "ringfire", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole ringfire after uninstall: %v, want not found", err)
	}
	after, err := client.Resource(crdGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Items) != len(crds.Items) {
		t.Errorf("%d CRDs after uninstall, %d before", len(after.Items), len(crds.Items))
	}
	for _, q := range []string{"root", "default"} {
		if _, err := client.Resource(queueGVR).Get(ctx, q, metav1.GetOptions{}); err != nil {
			t.Errorf("queue %s after uninstall: %v", q, err)
		}
	}
	if _, err := client.Resource(jobGVR).Namespace("default").Get(ctx, "survives-uninstall", metav1.GetOptions{}); err != nil {
		t.Errorf("the Volcano Job after uninstall: %v", err)
	}

	// Installed again, the release takes back the Queues it left (they still carry its name)
	// and leaves the CRDs as they are.
	if out, err := runHelm(t, helm, kube, "install", "ringfire", chartDir, "--namespace", ns); err != nil {
		t.Fatalf("helm install after uninstall: %v\n%s", err, out)
	}
	statefulSetOf("ringfire")
}

// notesSay fails for each of want that helm's output (its NOTES) lacks.
func notesSay(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("the NOTES lack %q:\n%s", w, out)
		}
	}
}

// requireHelm returns the pinned helm of the tools directory. Without it the test is skipped,
// or fails under $RINGFIRE_E2E=1: `make test` builds it (e2e/tools/build.sh).
func requireHelm(t *testing.T) string {
	t.Helper()
	path := filepath.Join(cluster.RequireTools(t), "helm")
	if _, err := os.Stat(path); err != nil {
		msg := fmt.Sprintf("no helm in $%s (%v): `make tools` builds it", cluster.ToolsBinEnv, err)
		if os.Getenv(cluster.E2EEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// runHelm runs helm with its configuration, cache and data in the test's own directories, so
// that it reads and writes nothing of the user's. It returns the standard output; an error
// carries the standard error.
func runHelm(t *testing.T, helm string, kube []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, helm, append(args, kube...)...)
	cmd.Env = cluster.HelmEnv(home)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s: %w: %s", args[0], err, stderr.String())
	}
	return out.String(), nil
}

// valuesArgs writes values to a file and returns helm's --values flag for it; none for "".
func valuesArgs(t *testing.T, values string) []string {
	t.Helper()
	if values == "" {
		return nil
	}
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--values", f}
}

// helmTemplate runs `helm template ringfire charts/ringfire` in namespace with values and
// decodes the objects.
func helmTemplate(t *testing.T, helm, namespace, values string, extra ...string) []*unstructured.Unstructured {
	t.Helper()
	args := append([]string{"template", "ringfire", chartDir, "--namespace", namespace}, valuesArgs(t, values)...)
	out, err := runHelm(t, helm, nil, append(args, extra...)...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("helm template: %v", err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}
