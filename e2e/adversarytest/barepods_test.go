package adversarytest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	var made, refused atomic.Int64
	var firstErr atomic.Value
	work := make(chan int)
	var wg sync.WaitGroup
	began := time.Now()
	for range bareWorkers {
		wg.Go(func() {
			for i := range work {
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bare-%d", i), Namespace: ns, Labels: labels, Annotations: ann},
					Spec:       vcjob.PodSpec(unfitCPU, vcjob.Memory),
				}
				pod.Spec.SchedulerName = "volcano"
				pod.Spec.Containers[0].Env = env
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				_, err := w.tenant.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
				cancel()
				switch {
				case err == nil:
					made.Add(1)
				case apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsRequestEntityTooLargeError(err):
					refused.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				default:
					t.Errorf("create pod %s: %v", pod.Name, err)
				}
			}
		})
	}
	n := attackCounts().barePods
	for i := range n {
		if len(w.fleet.Down()) > 0 {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	w.requireAlive(t, "the bare pods were made")
	t.Logf("%d bare pods of about %d KiB: %d made, %d refused, in %v", n, barePodBytes>>10, made.Load(), refused.Load(), time.Since(began).Round(time.Second))
	if r := firstErr.Load(); r != nil {
		t.Logf("the first refusal: %.300s", r)
	}
	var keys []string
	for i := range min(n, bareSlots) {
		keys = append(keys, fmt.Sprintf("%s/bare-%d", ns, i))
	}
	w.aim("bare-pods", keys...)
	if made.Load() == 0 {
		return
	}
	w.waitFor(t, "every bare pod has its PodGroup", 3*time.Minute, func() (bool, string) {
		n, err := w.count(ns, w.volcano.SchedulingV1beta1().RESTClient(), "podgroups", "")
		if err != nil {
			return false, err.Error()
		}
		return int64(n) >= made.Load(), fmt.Sprintf("%d PodGroups of %d pods", n, made.Load())
	})
	t.Logf("the bare pods' PodGroups are all made %v after the first pod", time.Since(began).Round(time.Second))
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
