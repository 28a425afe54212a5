package deploy_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/ringfire/ringfire/deploy"
	"github.com/ringfire/ringfire/e2e/cluster"
)

var shared = cluster.Shared{Options: cluster.Options{Nodes: 1}}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := shared.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop cluster:", err)
	}
	os.Exit(code)
}

// Every manifest of ringfire/ and etcd/ is accepted by a real API server: the namespace is
// made, everything else applied with dry-run, so the API server validates and admits each
// object (StatefulSets, PodDisruptionBudgets, RBAC) without running it.
func TestManifestsAreAcceptedByTheAPIServer(t *testing.T) {
	c := shared.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var all []*unstructured.Unstructured
	for _, dir := range []string{"ringfire", "etcd"} {
		objs, err := deploy.Objects(dir)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, objs...)
	}
	if all[0].GetKind() != "Namespace" || all[0].GetName() != deploy.Namespace {
		t.Fatalf("first object %s %s, want the namespace %s", all[0].GetKind(), all[0].GetName(), deploy.Namespace)
	}
	if err := deploy.Apply(ctx, c.RESTConfig(), all[:1], false); err != nil {
		t.Fatal(err)
	}
	if err := deploy.Apply(ctx, c.RESTConfig(), all[1:], true); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range all {
		kinds = append(kinds, o.GetKind()+"/"+o.GetName())
	}
	for _, want := range []string{
		"StatefulSet/ringfire", "PodDisruptionBudget/ringfire", "Service/ringfire", "ClusterRole/ringfire",
		"StatefulSet/ringfire-etcd", "PodDisruptionBudget/ringfire-etcd", "Service/ringfire-etcd",
		"ClusterRole/ringfire-metrics-reader", "NetworkPolicy/ringfire", "NetworkPolicy/ringfire-etcd",
	} {
		if !slices.Contains(kinds, want) {
			t.Errorf("no %s among %v", want, kinds)
		}
	}
	t.Logf("%d objects accepted: %v", len(all), kinds)
}

// The ServiceAccount's token reaches the API server as that account, and it may do what the
// ClusterRole grants and nothing else.
func TestServiceAccountConfigHasTheRolesPermissions(t *testing.T) {
	c := shared.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := deploy.InstallRBAC(ctx, c.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	cfg, err := deploy.ServiceAccountConfig(ctx, c.RESTConfig(), 600)
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	if _, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		t.Errorf("list pods as %s: %v", deploy.ServiceAccount, err)
	}
	if _, err := kube.CoreV1().Secrets("").List(ctx, metav1.ListOptions{Limit: 1}); err == nil || !isForbidden(err) {
		t.Errorf("list secrets as %s: %v, want forbidden (the role reaches the ssh plugin's Secret by name only)", deploy.ServiceAccount, err)
	}
	if _, err := kube.CoreV1().Secrets("kube-system").Get(ctx, "anything", metav1.GetOptions{}); err != nil && isForbidden(err) {
		t.Errorf("get a secret by name as %s: %v, want allowed (the ssh plugin's)", deploy.ServiceAccount, err)
	}
	if _, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		t.Errorf("list namespaces as %s (the gang scheduler reads their labels): %v", deploy.ServiceAccount, err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "not-ringfires"}}, metav1.CreateOptions{}); err == nil || !isForbidden(err) {
		t.Errorf("create a namespace as %s: %v, want forbidden", deploy.ServiceAccount, err)
	}
}

func isForbidden(err error) bool {
	type status interface{ Status() metav1.Status }
	s, ok := err.(status)
	return ok && s.Status().Code == 403
}

// The metrics reader may get the metrics port's three paths and nothing else.
func TestMetricsReaderRole(t *testing.T) {
	objs, err := deploy.Objects("ringfire")
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.ClusterRole
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" && o.GetName() == "ringfire-metrics-reader" {
			role = &rbacv1.ClusterRole{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role); err != nil {
				t.Fatal(err)
			}
		}
	}
	if role == nil {
		t.Fatal("no ClusterRole ringfire-metrics-reader in ringfire/")
	}
	want := rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics", "/status.json", "/"}, Verbs: []string{"get"}}
	if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].NonResourceURLs, want.NonResourceURLs) ||
		!slices.Equal(role.Rules[0].Verbs, want.Verbs) || len(role.Rules[0].Resources) > 0 {
		t.Errorf("rules %+v, want only %+v", role.Rules, want)
	}
}

// The ClusterRole grants no wildcard, no verb on RBAC itself, never escalate, bind or
// impersonate, and no list or watch of Secrets.
func TestClusterRoleIsLeast(t *testing.T) {
	objs, err := deploy.Objects("ringfire")
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.ClusterRole
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" && o.GetName() == "ringfire" {
			role = &rbacv1.ClusterRole{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role); err != nil {
				t.Fatal(err)
			}
		}
	}
	if role == nil {
		t.Fatal("no ClusterRole in ringfire/")
	}
	for i, r := range role.Rules {
		for _, list := range [][]string{r.APIGroups, r.Resources, r.Verbs} {
			if slices.Contains(list, "*") {
				t.Errorf("rule %d has a wildcard: %+v", i, r)
			}
		}
		if slices.Contains(r.APIGroups, "rbac.authorization.k8s.io") {
			t.Errorf("rule %d touches RBAC: %+v", i, r)
		}
		for _, v := range []string{"escalate", "bind", "impersonate", "deletecollection"} {
			if slices.Contains(r.Verbs, v) {
				t.Errorf("rule %d grants %s: %+v", i, v, r)
			}
		}
		if slices.Contains(r.APIGroups, "") && slices.Contains(r.Resources, "secrets") &&
			(slices.Contains(r.Verbs, "list") || slices.Contains(r.Verbs, "watch")) {
			t.Errorf("rule %d lists or watches Secrets, which reads every Secret of the cluster: %+v", i, r)
		}
		if len(r.NonResourceURLs) > 0 {
			t.Errorf("rule %d grants non-resource URLs (health and discovery are open to every account): %+v", i, r)
		}
	}
}
