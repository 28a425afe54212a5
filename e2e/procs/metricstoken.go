package procs

import (
	"context"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// MetricsReaderRole is the ClusterRole of deploy/ringfire that may read a
// replica's metrics port under --metrics-secure.
const MetricsReaderRole = "ringfire-metrics-reader"

// MetricsToken makes the ServiceAccount name in namespace, binds it to
// MetricsReaderRole when reader is set, and returns a token of it valid for
// an hour: what a scraper sends to replicas run with --metrics-secure. The
// namespace and the role must exist (deploy.InstallRBAC makes both in
// deploy.Namespace).
func MetricsToken(tb testing.TB, admin *rest.Config, namespace, name string, reader bool) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kube, err := kubernetes.NewForConfig(admin)
	if err != nil {
		tb.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if _, err := kube.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		tb.Fatalf("serviceaccount %s: %v", name, err)
	}
	if reader {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: MetricsReaderRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}},
		}
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			tb.Fatalf("bind %s to %s: %v", name, MetricsReaderRole, err)
		}
	}
	seconds := int64(3600)
	tr, err := kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		tb.Fatalf("token of serviceaccount %s: %v", name, err)
	}
	return tr.Status.Token
}
