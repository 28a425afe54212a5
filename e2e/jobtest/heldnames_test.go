package jobtest

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// The names the svc and ssh plugins need (the Service, the hosts ConfigMap, the
// NetworkPolicy and the Secret) held by objects someone else made, which no cache of
// ringfire's holds (no slot label): each create meets one, a read by name tells it is not
// the Job's, and the Job waits, told in a WaitingForDeletion Event, without a pod; once they
// are deleted it makes its own (looking again after 30 s) and runs.
func pluginNamesHeld(t *testing.T, s *stack.Stack) {
	ctx := context.Background()
	const name = "held"
	meta := func(n string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: n} }
	made := []struct {
		kind   string
		create func() error
		get    func() (metav1.Object, error)
		del    func() error
	}{
		{"Service",
			func() error {
				_, err := s.Kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: meta(name),
					Spec: corev1.ServiceSpec{ClusterIP: "None", Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
				return err
			},
			func() (metav1.Object, error) { return s.Kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}) },
			func() error { return s.Kube.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{}) }},
		{"ConfigMap",
			func() error {
				_, err := s.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta(name + "-svc")}, metav1.CreateOptions{})
				return err
			},
			func() (metav1.Object, error) {
				return s.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name+"-svc", metav1.GetOptions{})
			},
			func() error { return s.Kube.CoreV1().ConfigMaps(ns).Delete(ctx, name+"-svc", metav1.DeleteOptions{}) }},
		{"NetworkPolicy",
			func() error {
				_, err := s.Kube.NetworkingV1().NetworkPolicies(ns).Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: meta(name)}, metav1.CreateOptions{})
				return err
			},
			func() (metav1.Object, error) {
				return s.Kube.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{})
			},
			func() error {
				return s.Kube.NetworkingV1().NetworkPolicies(ns).Delete(ctx, name, metav1.DeleteOptions{})
			}},
		{"Secret",
			func() error {
				_, err := s.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: meta(name + "-ssh")}, metav1.CreateOptions{})
				return err
			},
			func() (metav1.Object, error) {
				return s.Kube.CoreV1().Secrets(ns).Get(ctx, name+"-ssh", metav1.GetOptions{})
			},
			func() error { return s.Kube.CoreV1().Secrets(ns).Delete(ctx, name+"-ssh", metav1.DeleteOptions{}) }},
	}
	for _, m := range made {
		if err := m.create(); err != nil {
			t.Fatalf("%s: %v", m.kind, err)
		}
	}
	job := vcjob.New(ns, name, vcjob.Task("worker", 2, "10m", ""))
	job.Spec.Plugins = map[string][]string{"svc": {}, "ssh": {}}
	job = vcjob.Create(t, s.Volcano, job)

	stack.WaitFor(t, "a WaitingForDeletion Event", 60*time.Second, func() (bool, string) {
		got := s.Events(ns, name, "WaitingForDeletion")
		return len(got) > 0 && strings.Contains(got[0], "which no controller owns"), strings.Join(got, "; ")
	})
	if pods := s.Pods(ns, name); len(pods) != 0 {
		t.Fatalf("%d pods made while the plugins' names are someone else's", len(pods))
	}
	for _, m := range made {
		got, err := m.get()
		if err != nil {
			t.Fatalf("%s made by the test: %v", m.kind, err)
		}
		if metav1.GetControllerOf(got) != nil {
			t.Errorf("%s made by the test was taken over: %v", m.kind, metav1.GetControllerOf(got))
		}
		if err := m.del(); err != nil {
			t.Fatalf("delete the %s: %v", m.kind, err)
		}
	}

	s.WaitPhase(ns, name, 2*time.Minute, batch.Running)
	for _, m := range made {
		got, err := m.get()
		if err != nil {
			t.Errorf("the Job's %s: %v", m.kind, err)
		} else if !cache.ControlledBy(got, job.UID) {
			t.Errorf("the %s is not the Job's: %v", m.kind, metav1.GetControllerOf(got))
		}
	}
}
