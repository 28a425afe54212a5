package bench

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// makeNamespaces creates the loads' namespaces before anything is counted,
// and waits, up to limit, until kube-controller-manager has filled each
// with its default ServiceAccount and its kube-root-ca.crt ConfigMap: a
// ConfigMap is a kind ringfire may write, so that write must not fall
// within the counts.
func makeNamespaces(ctx context.Context, kube kubernetes.Interface, names []string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for _, name := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
	}
	for _, name := range names {
		for {
			_, errSA := kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
			_, errCM := kube.CoreV1().ConfigMaps(name).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			if errSA == nil && errCM == nil {
				break
			}
			for _, err := range []error{errSA, errCM} {
				if err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("namespace %s: %w", name, err)
				}
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("namespace %s: no default ServiceAccount and kube-root-ca.crt within %v", name, limit)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}
