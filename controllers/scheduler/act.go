package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// bind carries out the cycle's bindings, a bounded number at once, gang
// by gang in the order decided. Between gangs it checks that the slot is
// still held, so a handover does not wait for a long list; a gang whose
// bindings have started is finished. Every pod bound is assumed until the
// informer shows it. It returns how many pods it bound.
func (s *shift) bind(v *view, bindings []Binding) int {
	c := s.c
	sem := make(chan struct{}, c.cfg.Parallelism)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bound []Binding
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
		s.assumed[b.Pod] = &assumedPod{uid: e.pod.UID, node: b.Node, group: b.PodGroup,
			task: e.task.Name, requests: e.task.Requests, at: now}
	}
	c.metrics.podsBound.Add(float64(len(bound)))
	return len(bound)
}

// bindOne binds one pod, its UID as a precondition. A pod bound meanwhile
// (Conflict) or deleted (NotFound) is not an error: the next cycle sees it.
func (s *shift) bindOne(pod *corev1.Pod, node string) bool {
	c := s.c
	if err := c.guard(s.ctx); err != nil {
		return false
	}
	err := c.cfg.Kube.CoreV1().Pods(pod.Namespace).Bind(s.ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	switch {
	case err == nil:
		s.recorder.Eventf(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node)
		return true
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		c.metrics.bindFailures.WithLabelValues(reasonOf(err)).Inc()
		c.log.Debug("pod not bound: bound or deleted meanwhile", "pod", pod.Namespace+"/"+pod.Name, "error", err)
	case s.ctx.Err() == nil:
		c.metrics.bindFailures.WithLabelValues(reasonOf(err)).Inc()
		c.log.Warn("cannot bind pod; the next cycle tries again", "pod", pod.Namespace+"/"+pod.Name, "node", node, "error", err)
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

// writeStatuses writes the PodGroups whose status the cycle changed, a
// bounded number at once, each with the resourceVersion it was read at: a
// PodGroup changed meanwhile is left to the next cycle. (ringfire's
// PodGroup CRD has no status subresource, so the write is an Update.) It
// returns how many it wrote.
func (s *shift) writeStatuses(v *view, result Result) int {
	c := s.c
	now := metav1.Now().Rfc3339Copy()
	transition := string(uuid.NewUUID())
	type write struct {
		pg   *vcv1beta1.PodGroup
		from *vcv1beta1.PodGroup
	}
	var writes []write
	for key, gs := range result.PodGroups {
		g := v.groups[key]
		if g == nil {
			continue
		}
		st := nextStatus(g, gs, transition, now, c.cfg.MessageQuiet)
		if equality.Semantic.DeepEqual(st, g.pg.Status) {
			continue
		}
		// Written anyway: with the latest message.
		st = nextStatus(g, gs, transition, now, 0)
		pg := g.pg.DeepCopy()
		pg.Status = st
		writes = append(writes, write{pg: pg, from: g.pg})
	}
	if len(writes) == 0 || !s.stillOwner() {
		return 0
	}
	// Phase changes first: an admission lets the Job controller make the
	// gang's pods, a waiting gang's new message can wait behind it.
	slices.SortFunc(writes, func(a, b write) int {
		ac, bc := a.pg.Status.Phase != a.from.Status.Phase, b.pg.Status.Phase != b.from.Status.Phase
		if ac != bc {
			if ac {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.pg.Namespace+"/"+a.pg.Name, b.pg.Namespace+"/"+b.pg.Name)
	})
	sem := make(chan struct{}, c.cfg.Parallelism)
	var wg sync.WaitGroup
	var mu sync.Mutex
	written := 0
	for _, w := range writes {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			got, err := s.writeStatus(w.pg)
			if err != nil {
				return
			}
			s.announce(w.from, got)
			mu.Lock()
			s.written.remember(w.from.ResourceVersion, got)
			written++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return written
}

func (s *shift) writeStatus(pg *vcv1beta1.PodGroup) (*vcv1beta1.PodGroup, error) {
	c := s.c
	if err := c.guard(s.ctx); err != nil {
		return nil, err
	}
	got, err := c.cfg.Volcano.SchedulingV1beta1().PodGroups(pg.Namespace).Update(s.ctx, pg, metav1.UpdateOptions{})
	if err != nil {
		c.metrics.statusFailures.WithLabelValues(reasonOf(err)).Inc()
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && s.ctx.Err() == nil {
			c.log.Warn("cannot write podgroup status; the next cycle tries again", "podgroup", pg.Namespace+"/"+pg.Name, "error", err)
		}
		return nil, fmt.Errorf("update podgroup %s/%s: %w", pg.Namespace, pg.Name, err)
	}
	return got, nil
}

// announce records the Events Volcano's scheduler records on a PodGroup: a
// warning when it becomes (or stays, for a new reason) unschedulable, and
// Scheduled when it starts running.
func (s *shift) announce(old, pg *vcv1beta1.PodGroup) {
	if c := condition(pg, vcv1beta1.PodGroupUnschedulableType); c != nil {
		if prev := condition(old, vcv1beta1.PodGroupUnschedulableType); prev == nil || prev.Message != c.Message {
			s.recorder.Event(pg, corev1.EventTypeWarning, string(vcv1beta1.PodGroupUnschedulableType), c.Message)
		}
		return
	}
	switch old.Status.Phase {
	case "", vcv1beta1.PodGroupPending, vcv1beta1.PodGroupInqueue:
	default:
		return // it ran before
	}
	if pg.Status.Phase == vcv1beta1.PodGroupRunning {
		s.recorder.Event(pg, corev1.EventTypeNormal, string(vcv1beta1.PodGroupScheduled), string(vcv1beta1.PodGroupReady))
	}
}

func condition(pg *vcv1beta1.PodGroup, t vcv1beta1.PodGroupConditionType) *vcv1beta1.PodGroupCondition {
	for i := range pg.Status.Conditions {
		if pg.Status.Conditions[i].Type == t {
			return &pg.Status.Conditions[i]
		}
	}
	return nil
}
