package vcjob

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// What the suites read of their Jobs and make for them, each in one request of at most
// readTimeout: a failure ends the test.

const readTimeout = 10 * time.Second

// PodsOf counts the pods of the Volcano Job name in ns.
func PodsOf(t testing.TB, kube kubernetes.Interface, ns, name string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batch.JobNameKey + "=" + name})
	if err != nil {
		t.Fatalf("list pods of Job %s/%s: %v", ns, name, err)
	}
	return len(list.Items)
}

// EventsOn returns the Events of ns on the object of kind and name.
func EventsOn(t testing.TB, kube kubernetes.Interface, ns, kind, name string) []corev1.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	list, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=" + kind + ",involvedObject.name=" + name,
	})
	if err != nil {
		t.Fatalf("list Events of %s %s/%s: %v", kind, ns, name, err)
	}
	return list.Items
}

// Namespace makes a namespace named prefix-<random> and returns its name.
func Namespace(t testing.TB, kube kubernetes.Interface, prefix string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s-*: %v", prefix, err)
	}
	return ns.Name
}
