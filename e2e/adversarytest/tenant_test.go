package adversarytest

import (
	"context"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"
)

// tenantUser is who every attack acts as: a plain user, impersonated, with
// the edit role in the namespaces of the attacks and nothing cluster-wide.
// Not cluster-admin and not ringfire's ServiceAccount, so that an admission
// policy that lets only ringfire set its labels sees a requester it must
// refuse.
const tenantUser = "mallory"

// tenant is the clients of tenantUser.
type tenant struct {
	kube    kubernetes.Interface
	volcano vcclient.Interface
}

func newTenant(admin *rest.Config) *tenant {
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: tenantUser}
	return &tenant{kube: kubernetes.NewForConfigOrDie(cfg), volcano: vcclient.NewForConfigOrDie(cfg)}
}

// volcanoEditor is what an editor of a namespace may do with the Volcano
// API there (Kubernetes' edit role knows only the built-in kinds).
var volcanoEditor = []rbacv1.PolicyRule{
	{APIGroups: []string{"batch.volcano.sh"}, Resources: []string{"jobs", "cronjobs"}, Verbs: []string{"*"}},
	{APIGroups: []string{"bus.volcano.sh"}, Resources: []string{"commands"}, Verbs: []string{"*"}},
	{APIGroups: []string{"scheduling.volcano.sh"}, Resources: []string{"podgroups"}, Verbs: []string{"*"}},
	{APIGroups: []string{"flow.volcano.sh"}, Resources: []string{"jobflows", "jobtemplates"}, Verbs: []string{"*"}},
}

// grant makes the tenant an editor of ns (Kubernetes' edit ClusterRole bound
// in ns, and a Role of volcanoEditor) and waits until the API server's
// authorizer says so.
func (tn *tenant) grant(t *testing.T, admin kubernetes.Interface, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: tenantUser}}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "volcano-editor"}, Rules: volcanoEditor,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []rbacv1.RoleRef{
		{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "volcano-editor"},
	} {
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "tenant-" + ref.Name}, RoleRef: ref, Subjects: subjects,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range []authorizationv1.ResourceAttributes{
		{Namespace: ns, Verb: "create", Resource: "configmaps"},
		{Namespace: ns, Verb: "update", Group: "batch.volcano.sh", Resource: "cronjobs"},
	} {
		for {
			review, err := tn.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
				&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}},
				metav1.CreateOptions{})
			if err == nil && review.Status.Allowed {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("the tenant %s may still not %s %s in %s: %v", tenantUser, a.Verb, a.Resource, ns, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
