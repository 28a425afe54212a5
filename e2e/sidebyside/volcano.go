package sidebyside

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ringfire/ringfire/e2e/volcano"
)

// StartVolcano starts a control plane and real Volcano against it:
// vc-controller-manager (the job, queue, PodGroup, CronJob and garbage
// collection controllers) and vc-scheduler with e2e/conformance's
// configuration, both without leader election, as the admin. Volcano's
// webhooks are not run: ringfire's CRD rules and admission policies stand in
// for them, as on the ringfire side. It returns once the scheduler has
// opened the default Queue (its first cycle ran) and stops both when the
// test ends.
func StartVolcano(t testing.TB, bin string) *Env {
	t.Helper()
	env := startControlPlane(t, "volcano")
	installSchedulerOnlyCRDs(t, env)
	kubeconfig := env.Cluster.Kubeconfig()
	volcano.Start(t, bin, env.LogDir, kubeconfig, "vc-controller-manager",
		"--controllers", "job-controller,queue-controller,pg-controller,cronjob-controller,jobflow-controller,jobtemplate-controller,gc-controller")
	volcano.Start(t, bin, env.LogDir, kubeconfig, "vc-scheduler", "--scheduler-conf", volcano.SchedulerConf(t), "--cache-dumper=false")
	waitDefaultQueueOpen(t, env)
	return env
}

// schedulerOnlyKinds are the kinds vc-scheduler lists and watches, and waits for, that ringfire
// neither serves nor installs: group, version, kind, plural.
var schedulerOnlyKinds = [][4]string{
	{"nodeinfo.volcano.sh", "v1alpha1", "Numatopology", "numatopologies"},
}

// installSchedulerOnlyCRDs installs a CRD of each of schedulerOnlyKinds, cluster-scoped with an
// open schema: no object of them is ever made here, but vc-scheduler does not schedule until it
// has listed them.
func installSchedulerOnlyCRDs(t testing.TB, env *Env) {
	t.Helper()
	crds := env.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, k := range schedulerOnlyKinds {
		group, version, kind, plural := k[0], k[1], k[2], k[3]
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": plural + "." + group},
			"spec": map[string]any{
				"group": group, "scope": "Cluster",
				"names": map[string]any{"kind": kind, "listKind": kind + "List", "plural": plural, "singular": strings.ToLower(kind)},
				"versions": []any{map[string]any{
					"name": version, "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
				}},
			},
		}}
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create CRD %s: %v", crd.GetName(), err)
		}
		gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: plural}
		for {
			if _, err := env.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{}); err == nil {
				break
			} else if ctx.Err() != nil {
				t.Fatalf("CRD %s not served: %v", crd.GetName(), err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// waitDefaultQueueOpen waits until the default Queue's status says Open:
// Volcano's queue controller has synced, so Jobs submitted now are served.
func waitDefaultQueueOpen(t testing.TB, env *Env) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		q, err := env.Volcano.SchedulingV1beta1().Queues().Get(context.Background(), "default", metav1.GetOptions{})
		if err == nil && q.Status.State == "Open" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the default Queue is not Open a minute after Volcano started (last: %v, %+v)", err, q)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
