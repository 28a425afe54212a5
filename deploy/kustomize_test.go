package deploy_test

import (
	"bytes"
	"context"
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

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/ringfire/ringfire/deploy"
	"github.com/ringfire/ringfire/deploy/monitoring"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/internal/replica"
)

// The kustomizations the tests render: the base, the CRDs, and every overlay (an overlay
// added to deploy/overlays without a case here fails TestKustomizeOverlays).
var kustomizations = []string{
	".", "crds", "monitoring",
	"overlays/production", "overlays/external-etcd", "overlays/single-node", "overlays/monitoring",
	"overlays/crds-before-1.36", "overlays/gang-scheduler",
}

// The base renders to exactly the manifests of ringfire/ and etcd/ as written, and deploy/crds
// to every CRD, policy and Queue that crds.Install applies: kustomize adds or drops nothing,
// and no file is missing from a kustomization.
func TestKustomizeBase(t *testing.T) {
	kubectl := requireKubectl(t)
	var want []*unstructured.Unstructured
	for _, dir := range []string{"ringfire", "etcd"} {
		objs, err := deploy.Objects(dir)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, objs...)
	}
	got := render(t, kubectl, ".")
	if len(got) != len(want) {
		t.Fatalf("the base renders %d objects, the manifests are %d: %v", len(got), len(want), names(got))
	}
	for _, w := range want {
		g := find(got, w.GetKind(), w.GetName())
		if g == nil {
			t.Errorf("the base lacks %s %s", w.GetKind(), w.GetName())
			continue
		}
		if !reflect.DeepEqual(g.Object, w.Object) {
			t.Errorf("%s %s renders otherwise than written:\n%v\nwant\n%v", w.GetKind(), w.GetName(), g.Object, w.Object)
		}
	}

	files, err := filepath.Glob("crds/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "kustomization.yaml" })
	if got := render(t, kubectl, "crds"); len(got) != len(files) {
		t.Errorf("deploy/crds renders %d objects from %d files: %v", len(got), len(files), names(got))
	}
}

// Each overlay does what it says, and nothing it does not.
func TestKustomizeOverlays(t *testing.T) {
	kubectl := requireKubectl(t)
	overlays, err := filepath.Glob("overlays/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range overlays {
		if !slices.Contains(kustomizations, o) {
			t.Errorf("overlay %s has no case in TestKustomizeOverlays", o)
		}
	}
	base := render(t, kubectl, ".")

	t.Run("production", func(t *testing.T) {
		objs := render(t, kubectl, "overlays/production")
		if len(objs) != len(base) {
			t.Errorf("%d objects, the base has %d", len(objs), len(base))
		}
		const ns = "batch-system"
		for _, o := range objs {
			switch o.GetKind() {
			case "Namespace":
				if o.GetName() != ns {
					t.Errorf("namespace %s, want %s", o.GetName(), ns)
				}
			case "ClusterRole":
			case "ClusterRoleBinding":
				subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
				if ns0 := subjects[0].(map[string]any)["namespace"]; ns0 != ns {
					t.Errorf("ClusterRoleBinding's ServiceAccount in namespace %v, want %s", ns0, ns)
				}
			case "PriorityLevelConfiguration":
			case "FlowSchema":
				rules, _, _ := unstructured.NestedSlice(o.Object, "spec", "rules")
				sa := rules[0].(map[string]any)["subjects"].([]any)[0].(map[string]any)["serviceAccount"].(map[string]any)
				if sa["namespace"] != ns {
					t.Errorf("FlowSchema's ServiceAccount in namespace %v, want %s", sa["namespace"], ns)
				}
			default:
				if o.GetNamespace() != ns {
					t.Errorf("%s %s in namespace %q, want %s", o.GetKind(), o.GetName(), o.GetNamespace(), ns)
				}
			}
		}
		ringfire, etcd := statefulSet(t, objs, "ringfire"), statefulSet(t, objs, "ringfire-etcd")
		if got := field(ringfire, "spec", "replicas"); fmt.Sprint(got) != "5" {
			t.Errorf("ringfire replicas %v, want 5", got)
		}
		if got := container(t, ringfire)["image"]; got != "registry.example.com/platform/ringfire:v0.1.0" {
			t.Errorf("ringfire image %v", got)
		}
		if got := field(container(t, ringfire), "resources", "requests", "cpu"); got != "2" {
			t.Errorf("ringfire CPU request %v, want 2", got)
		}
		for _, s := range []*unstructured.Unstructured{ringfire, etcd} {
			if got := field(s, "spec", "template", "spec", "priorityClassName"); got != "system-cluster-critical" {
				t.Errorf("%s priorityClassName %v, want system-cluster-critical", s.GetName(), got)
			}
		}
		// The etcd members' names and ringfire's endpoints follow the namespace by
		// $(POD_NAMESPACE): nothing in the manifests still names the base's namespace.
		if out := renderText(t, kubectl, "overlays/production"); strings.Contains(out, deploy.Namespace) {
			t.Errorf("the production overlay still names %s:\n%s", deploy.Namespace, grepLines(out, deploy.Namespace))
		}
	})

	t.Run("external-etcd", func(t *testing.T) {
		objs := render(t, kubectl, "overlays/external-etcd")
		for _, o := range objs {
			if strings.HasPrefix(o.GetName(), "ringfire-etcd") {
				t.Errorf("%s %s: the external etcd overlay runs no etcd", o.GetKind(), o.GetName())
			}
		}
		ringfire := statefulSet(t, objs, "ringfire")
		if got := env(t, ringfire, "ETCD_ENDPOINTS"); !strings.HasPrefix(got, "https://etcd-a.example.com:2379,") {
			t.Errorf("ETCD_ENDPOINTS %q", got)
		}
		if !slices.Contains(args(t, ringfire), "--etcd-endpoints=$(ETCD_ENDPOINTS)") {
			t.Errorf("ringfire's args do not read ETCD_ENDPOINTS: %v", args(t, ringfire))
		}
		volumes, _, _ := unstructured.NestedSlice(ringfire.Object, "spec", "template", "spec", "volumes")
		if got := field(volumes[0].(map[string]any), "secret", "secretName"); got != "ringfire-etcd-client-external" {
			t.Errorf("etcd client Secret %v", got)
		}
	})

	t.Run("single-node", func(t *testing.T) {
		objs := render(t, kubectl, "overlays/single-node")
		etcd := statefulSet(t, objs, "ringfire-etcd")
		anti, _, _ := unstructured.NestedMap(etcd.Object, "spec", "template", "spec", "affinity", "podAntiAffinity")
		if _, required := anti["requiredDuringSchedulingIgnoredDuringExecution"]; required {
			t.Error("etcd's pod anti-affinity is still required")
		}
		if _, preferred := anti["preferredDuringSchedulingIgnoredDuringExecution"]; !preferred {
			t.Error("etcd's pod anti-affinity is not even preferred")
		}
		// Everything else is the base's.
		baseEtcd := statefulSet(t, base, "ringfire-etcd")
		unstructured.RemoveNestedField(baseEtcd.Object, "spec", "template", "spec", "affinity")
		unstructured.RemoveNestedField(etcd.Object, "spec", "template", "spec", "affinity")
		if !reflect.DeepEqual(baseEtcd.Object, etcd.Object) {
			t.Error("the single-node overlay changes more of etcd's StatefulSet than its anti-affinity")
		}
		if len(objs) != len(base) {
			t.Errorf("%d objects, the base has %d", len(objs), len(base))
		}
	})

	t.Run("monitoring", func(t *testing.T) {
		objs := render(t, kubectl, "overlays/monitoring")
		if len(objs) != len(base)+6 {
			t.Errorf("%d objects, want the base's %d and 6: %v", len(objs), len(base), names(objs))
		}
		sm := find(objs, "ServiceMonitor", "ringfire")
		if sm == nil {
			t.Fatal("no ServiceMonitor")
		}
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if ep := endpoints[0].(map[string]any); ep["port"] != "metrics" || ep["interval"] != "15s" || ep["scheme"] != "https" {
			t.Errorf("ServiceMonitor endpoint %v, want port metrics every 15s over https", ep)
		}
		// The scrape's token is the scraper account's, bound to the reader role and nothing else.
		if got := field(endpoints[0].(map[string]any), "authorization", "credentials", "name"); got != "ringfire-metrics-scraper" {
			t.Errorf("ServiceMonitor's token from Secret %v, want ringfire-metrics-scraper", got)
		}
		secret := find(objs, "Secret", "ringfire-metrics-scraper")
		if secret == nil || field(secret, "type") != "kubernetes.io/service-account-token" ||
			secret.GetAnnotations()["kubernetes.io/service-account.name"] != "ringfire-metrics-scraper" {
			t.Errorf("no token Secret of the ServiceAccount ringfire-metrics-scraper: %v", secret)
		}
		binding := find(objs, "ClusterRoleBinding", "ringfire-metrics-scraper")
		if binding == nil || field(binding, "roleRef", "name") != "ringfire-metrics-reader" {
			t.Errorf("ringfire-metrics-scraper is not bound to ringfire-metrics-reader: %v", binding)
		}
		svc := find(objs, "Service", "ringfire")
		ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
		if ports[0].(map[string]any)["name"] != "metrics" || field(svc, "spec", "clusterIP") != "None" {
			t.Errorf("the ServiceMonitor's Service is not headless with a port named metrics: %v", svc.Object["spec"])
		}
		if find(objs, "PrometheusRule", "ringfire") == nil {
			t.Error("no PrometheusRule")
		}
		cm := find(objs, "ConfigMap", "ringfire-grafana-dashboard")
		if cm == nil {
			t.Fatal("no dashboard ConfigMap")
		}
		if cm.GetLabels()["grafana_dashboard"] != "1" {
			t.Errorf("dashboard ConfigMap labels %v, want grafana_dashboard: \"1\"", cm.GetLabels())
		}
		dashboard, err := monitoring.DashboardJSON()
		if err != nil {
			t.Fatal(err)
		}
		if got := field(cm, "data", "grafana-dashboard.json"); got != string(dashboard) {
			t.Error("the ConfigMap's dashboard is not grafana-dashboard.json")
		}
	})

	t.Run("gang-scheduler", func(t *testing.T) {
		objs := render(t, kubectl, "overlays/gang-scheduler")
		if len(objs) != len(base)+2 {
			t.Errorf("%d objects, want the base's %d and the scheduler's role and binding: %v", len(objs), len(base), names(objs))
		}
		ringfire := statefulSet(t, objs, "ringfire")
		if want := "--controllers=" + strings.Join(replica.DefaultControllers(), ",") + ",scheduler"; !slices.Contains(args(t, ringfire), want) {
			t.Errorf("ringfire's args lack %s: %v", want, args(t, ringfire))
		}
		role := find(objs, "ClusterRole", "ringfire-scheduler")
		scheduler, err := deploy.Objects(deploy.SchedulerDir)
		if err != nil {
			t.Fatal(err)
		}
		if role == nil || !reflect.DeepEqual(role.Object, find(scheduler, "ClusterRole", "ringfire-scheduler").Object) {
			t.Errorf("the scheduler's ClusterRole is not %s's: %v", deploy.SchedulerDir, role)
		}
		binding := find(objs, "ClusterRoleBinding", "ringfire-scheduler")
		subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
		if field(binding, "roleRef", "name") != "ringfire-scheduler" || len(subjects) != 1 ||
			subjects[0].(map[string]any)["name"] != deploy.ServiceAccount || subjects[0].(map[string]any)["namespace"] != deploy.Namespace {
			t.Errorf("ringfire-scheduler is not bound to the replicas' ServiceAccount: %v", binding.Object)
		}
		// The base runs no scheduler and binds none of its grants.
		if find(base, "ClusterRole", "ringfire-scheduler") != nil || slices.ContainsFunc(args(t, statefulSet(t, base, "ringfire")), func(a string) bool {
			return strings.HasPrefix(a, "--controllers")
		}) {
			t.Error("the base runs the scheduler or carries its role")
		}
	})

	t.Run("crds-before-1.36", func(t *testing.T) {
		all, objs := render(t, kubectl, "crds"), render(t, kubectl, "overlays/crds-before-1.36")
		var left []string
		for _, o := range all {
			if find(objs, o.GetKind(), o.GetName()) == nil {
				left = append(left, o.GetKind()+"/"+o.GetName())
			}
		}
		slices.Sort(left)
		want := []string{
			"MutatingAdmissionPolicy/ringfire-job-defaults", "MutatingAdmissionPolicy/ringfire-queue-defaults",
			"MutatingAdmissionPolicyBinding/ringfire-job-defaults", "MutatingAdmissionPolicyBinding/ringfire-queue-defaults",
		}
		if !slices.Equal(left, want) || len(objs) != len(all)-len(want) {
			t.Errorf("the overlay leaves out %v, want %v", left, want)
		}
	})
}

// What every kustomization renders is accepted by a real API server: deploy/crds is installed
// for real as docs/operations.md says (apply until it succeeds: the Queues are refused until
// the API server serves their CRD, a moment after the first apply created it), everything else
// is applied with server-side dry-run, so that the API server validates and admits each object
// without running it. The Prometheus Operator's kinds are left out: the test cluster does not
// serve them.
func TestKustomizationsAreAcceptedByTheAPIServer(t *testing.T) {
	kubectl := requireKubectl(t)
	c := shared.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", c.Kubeconfig()}, args...)...).CombinedOutput()
		return string(out), err
	}
	const attempts = 30
	for i := 1; ; i++ {
		out, err := run("apply", "--server-side", "-k", "crds")
		if err == nil {
			t.Logf("deploy/crds applied in %d attempts", i)
			break
		}
		if i == attempts {
			t.Fatalf("apply of deploy/crds failed %d times, 1 s apart: %v\n%s", attempts, err, out)
		}
		time.Sleep(time.Second)
	}
	for _, q := range []string{"root", "default"} {
		if out, err := run("get", "queue", q); err != nil {
			t.Errorf("queue %s: %v\n%s", q, err, out)
		}
	}
	for _, k := range kustomizations {
		objs := render(t, kubectl, k)
		var namespaces, rest []*unstructured.Unstructured
		var skipped []string
		for _, o := range objs {
			switch {
			case o.GetKind() == "Namespace":
				namespaces = append(namespaces, o)
			case o.GroupVersionKind().Group == "monitoring.coreos.com":
				skipped = append(skipped, o.GetKind())
			default:
				rest = append(rest, o)
			}
		}
		if err := deploy.Apply(ctx, c.RESTConfig(), namespaces, false); err != nil {
			t.Errorf("%s: %v", k, err)
			continue
		}
		if err := deploy.Apply(ctx, c.RESTConfig(), rest, true); err != nil {
			t.Errorf("%s: %v", k, err)
			continue
		}
		t.Logf("%s: %d objects accepted (dry-run); not served here: %v", k, len(objs)-len(skipped), skipped)
	}
}

// requireKubectl returns the pinned kubectl of the tools directory, or skips the test without
// it.
func requireKubectl(t *testing.T) string {
	t.Helper()
	path := filepath.Join(cluster.RequireTools(t), "kubectl")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no kubectl in $%s (%v): `make tools` builds it", cluster.ToolsBinEnv, err)
	}
	return path
}

// renderText runs `kubectl kustomize dir`.
func renderText(t *testing.T, kubectl, dir string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kubectl, "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
	}
	return string(out)
}

// render runs `kubectl kustomize dir` and decodes the objects.
func render(t *testing.T, kubectl, dir string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(renderText(t, kubectl, dir)), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("kubectl kustomize %s: %v", dir, err)
		}
		if len(obj.Object) > 0 {
			if clusterScopedUnknownToKustomize[obj.GetKind()] {
				obj.SetNamespace("") // as the API server stores it
			}
			out = append(out, obj)
		}
	}
}

// clusterScopedUnknownToKustomize are the cluster-scoped kinds kubectl's kustomize does not know
// as such: an overlay's namespace is written on them too, and the API server drops it.
var clusterScopedUnknownToKustomize = map[string]bool{"FlowSchema": true, "PriorityLevelConfiguration": true}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	return out
}

func statefulSet(t *testing.T, objs []*unstructured.Unstructured, name string) *unstructured.Unstructured {
	t.Helper()
	s := find(objs, "StatefulSet", name)
	if s == nil {
		t.Fatalf("no StatefulSet %s among %v", name, names(objs))
	}
	return s
}

// field is the value at path in obj, or nil.
func field(obj any, path ...string) any {
	var m map[string]any
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		m = o.Object
	case map[string]any:
		m = o
	}
	v, _, _ := unstructured.NestedFieldNoCopy(m, path...)
	return v
}

// container is the first container of a StatefulSet's pod template.
func container(t *testing.T, s *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(s.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		t.Fatalf("%s has no container", s.GetName())
	}
	return cs[0].(map[string]any)
}

func args(t *testing.T, s *unstructured.Unstructured) []string {
	var out []string
	for _, a := range container(t, s)["args"].([]any) {
		out = append(out, a.(string))
	}
	return out
}

func env(t *testing.T, s *unstructured.Unstructured, name string) string {
	for _, e := range container(t, s)["env"].([]any) {
		if e := e.(map[string]any); e["name"] == name {
			v, _ := e["value"].(string)
			return v
		}
	}
	t.Errorf("%s has no env %s", s.GetName(), name)
	return ""
}

func grepLines(text, s string) string {
	var out []string
	for line := range strings.Lines(text) {
		if strings.Contains(line, s) {
			out = append(out, strings.TrimRight(line, "\n"))
		}
	}
	return strings.Join(out, "\n")
}
