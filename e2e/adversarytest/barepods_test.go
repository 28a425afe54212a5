package adversarytest

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ringfire/ringfire/e2e/vcjob"
)

func init() {
	register(attack{name: "bare-pods", run: attackBarePods})
}

// The bare pods: counts.barePods pods of no owner for the volcano scheduler, each
// of about barePodBytes (200 KiB of annotations, the rest labels and
// environment), asking for more CPU than the cluster has, so that each
// stays Pending with the PodGroup ringfire makes for it.
const (
	barePodBytes = 1 << 20
	bareWorkers  = 4
	bareSlots    = 8
)

// attackBarePods creates the pods as the tenant.
func attackBarePods(t *testing.T, w *world) {
	ns := w.namespace(t, "bare")
	labels := bigLabels(barePodBytes / 2)
	ann := padding("pod", 200<<10)
	env := bigEnv(barePodBytes - barePodBytes/2 - 200<<10)
	n := attackCounts().barePods
	tl := w.createAll(n, bareWorkers, func(err error) bool {
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsRequestEntityTooLargeError(err)
	}, func(ctx context.Context, i int) error {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bare-%d", i), Namespace: ns, Labels: labels, Annotations: ann},
			Spec:       vcjob.PodSpec(unfitCPU, vcjob.Memory),
		}
		pod.Spec.SchedulerName = "volcano"
		pod.Spec.Containers[0].Env = env
		_, err := w.tenant.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	w.requireAlive(t, "the bare pods were made")
	tl.report(t, n, fmt.Sprintf("bare pods of about %d KiB", barePodBytes>>10))
	var keys []string
	for i := range min(n, bareSlots) {
		keys = append(keys, fmt.Sprintf("%s/bare-%d", ns, i))
	}
	w.aim("bare-pods", keys...)
	w.waitPodGroups(t, ns, "bare pods", tl)
}

// bigEnv returns environment variables of about n bytes in all.
func bigEnv(n int) []corev1.EnvVar {
	const value = 1 << 10
	var env []corev1.EnvVar
	for i := 0; i*value < n; i++ {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("ADVERSARY_%d", i), Value: fmt.Sprintf("%0*d", value, i)})
	}
	return env
}
