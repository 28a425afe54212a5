package scheduler

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/ringfire/ringfire/controllers/scheduler/core"
)

// bind carries out the cycle's bindings, a bounded number at once, gang
// by gang in the order decided. Between gangs it checks that the slot is
// still held, so a handover does not wait for a long list; a gang whose
// bindings have started is finished. Every pod bound is assumed until the
// informer shows it. It returns how many pods it bound.
func (s *shift) bind(v *view, bindings []core.Binding) int {
	c := s.c
	sem := make(chan struct{}, c.cfg.Parallelism)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bound []core.Binding
	for i, b := range bindings {
		if (i == 0 || bindings[i-1].PodGroup != b.PodGroup) && !s.stillOwner() {
			break
		}
		e := v.pending[b.Pod]
		if e == nil {
			continue // cannot happen: Allocate binds only the snapshot's tasks
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if s.bindOne(e.pod, b.Node) {
				mu.Lock()
				bound = append(bound, b)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	now := time.Now()
	for _, b := range bound {
		e := v.pending[b.Pod]
		s.assumed[b.Pod] = &assumedPod{pod: e.pod, uid: e.pod.UID, node: b.Node, group: b.PodGroup,
			task: e.task.Name, requests: e.task.Requests, at: now}
	}
	c.metrics.podsBound.Add(float64(len(bound)))
	return len(bound)
}

// bindOne binds one pod, its UID as a precondition. A pod bound meanwhile
// (Conflict) or deleted (NotFound) is not an error: the next cycle sees it.
func (s *shift) bindOne(pod *corev1.Pod, node string) bool {
	c := s.c
	if err := c.Guard(s.ctx); err != nil {
		return false
	}
	err := c.cfg.Kube.CoreV1().Pods(pod.Namespace).Bind(s.ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	switch {
	case err == nil:
		if c.cfg.PodEvents {
			s.recorder.Eventf(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node)
		}
		return true
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		c.metrics.bindFailures.WithLabelValues(reasonOf(err)).Inc()
		c.log.Debug("pod not bound: bound or deleted meanwhile", "pod", toolscache.MetaObjectToName(pod).String(), "error", err)
	case s.ctx.Err() == nil:
		c.metrics.bindFailures.WithLabelValues(reasonOf(err)).Inc()
		c.log.Warn("cannot bind pod; the next cycle tries again", "pod", toolscache.MetaObjectToName(pod).String(), "node", node, "error", err)
	}
	return false
}

func reasonOf(err error) string {
	switch {
	case apierrors.IsConflict(err):
		return "conflict"
	case apierrors.IsNotFound(err):
		return "not_found"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	}
	return "error"
}
