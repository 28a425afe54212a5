package queuetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ringfire/ringfire/e2e/stack"
)

// A bare pod owned by a ReplicaSet, a StatefulSet, a DaemonSet and a batch/v1 Job (owner
// references that are not the controller's, so none of their controllers acts on it): its
// PodGroup carries the volcano.sh/ annotations of each, read by name from the API server.
// None of the owners makes a pod: no replicas, no node to run on, suspended.
func podOwnersAnnotations(t *testing.T, s *stack.Stack) {
	ctx := context.Background()
	const name = "owned"
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"queuetest.ringfire.io/none": name}}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: selector.MatchLabels},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"queuetest.ringfire.io/no-such-node": "true"},
			Containers:   []corev1.Container{{Name: "main", Image: "example.invalid/none:latest"}},
		},
	}
	meta := func(kind string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{"volcano.sh/from-" + kind: "yes"}}
	}
	var refs []metav1.OwnerReference
	add := func(apiVersion, kind string, obj metav1.Object, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		refs = append(refs, metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: obj.GetName(), UID: obj.GetUID()})
	}
	rs, err := s.Kube.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: meta("replicaset"),
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(0)), Selector: selector, Template: template}}, metav1.CreateOptions{})
	add("apps/v1", "ReplicaSet", rs, err)
	ss, err := s.Kube.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: meta("statefulset"),
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(0)), Selector: selector, Template: template}}, metav1.CreateOptions{})
	add("apps/v1", "StatefulSet", ss, err)
	ds, err := s.Kube.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{ObjectMeta: meta("daemonset"),
		Spec: appsv1.DaemonSetSpec{Selector: selector, Template: template}}, metav1.CreateOptions{})
	add("apps/v1", "DaemonSet", ds, err)
	jobTemplate := *template.DeepCopy()
	jobTemplate.Spec.RestartPolicy = corev1.RestartPolicyNever
	job, err := s.Kube.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{ObjectMeta: meta("job"),
		Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: jobTemplate}}, metav1.CreateOptions{})
	add("batch/v1", "Job", job, err)

	pod := createGatedPodOwned(t, s, name, "default", refs)
	group := "podgroup-" + string(pod.UID)
	stack.WaitFor(t, "the pod's PodGroup", 30*time.Second, func() (bool, string) {
		pg, err := s.Volcano.SchedulingV1beta1().PodGroups(ns).Get(ctx, group, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, kind := range []string{"replicaset", "statefulset", "daemonset", "job"} {
			if pg.Annotations["volcano.sh/from-"+kind] != "yes" {
				return false, fmt.Sprint("annotations ", pg.Annotations)
			}
		}
		return true, ""
	})
}
