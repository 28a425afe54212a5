package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	toolscache "k8s.io/client-go/tools/cache"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/controllers/scheduler/core"
)

// statusWrite is one PodGroup to write: the object as read (from) and with
// its next status (pg).
type statusWrite struct {
	pg, from *vcv1beta1.PodGroup
	cause    string // the metric's label: decisive, completed, message, awaiting_pods or counts
}

// plannedWrites are the PodGroups whose status is worth a write now (see
// compare and quiet.due), phase changes first: an admission lets the Job
// controller make the gang's pods, a waiting gang's new message can wait
// behind it. It is the pure part of writeStatuses.
func plannedWrites(groups map[string]*groupView, decided map[string]core.GroupStatus, q quiet,
	transitionID string, now metav1.Time, history *groupHistory) []statusWrite {
	var writes []statusWrite
	for key, gs := range decided {
		g := groups[key]
		if g == nil {
			continue
		}
		st := nextStatus(g, gs, transitionID, now)
		ch := compare(g.pg.Status, st)
		if !ch.any() {
			history.settled(key)
			continue
		}
		standing := now.Time
		if !ch.decisive {
			standing = history.standing(key, fingerprint(st), now.Time)
		}
		if !q.due(ch, now, history.lastWrite(key), standing) {
			continue
		}
		pg := g.pg.DeepCopy()
		pg.Status = st
		writes = append(writes, statusWrite{pg: pg, from: g.pg, cause: ch.cause()})
	}
	slices.SortFunc(writes, func(a, b statusWrite) int {
		ac, bc := a.pg.Status.Phase != a.from.Status.Phase, b.pg.Status.Phase != b.from.Status.Phase
		if ac != bc {
			if ac {
				return -1
			}
			return 1
		}
		return cmp.Compare(toolscache.MetaObjectToName(a.pg).String(), toolscache.MetaObjectToName(b.pg).String())
	})
	return writes
}

// writeStatuses writes the PodGroups whose status is worth a write, a
// bounded number at once, each with the resourceVersion it was read at: a
// PodGroup changed meanwhile is left to the next cycle. (ringfire's
// PodGroup CRD has no status subresource, so the write is an Update.) It
// returns how many it wrote.
func (s *shift) writeStatuses(v *view, result core.Result) int {
	c := s.c
	s.history.prune(v.groups)
	q := quiet{message: c.cfg.MessageQuiet, pods: c.cfg.PodsQuiet, podsAtMost: podsAtMost * c.cfg.PodsQuiet}
	writes := plannedWrites(v.groups, result.PodGroups, q, string(uuid.NewUUID()), metav1.Now().Rfc3339Copy(), s.history)
	if len(writes) == 0 || !s.stillOwner() {
		return 0
	}
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
			c.metrics.statusWrites.WithLabelValues(w.cause).Inc()
			s.announce(w.from, got)
			mu.Lock()
			s.written.Remember(toolscache.MetaObjectToName(got).String(), w.from.ResourceVersion, got)
			s.history.written(toolscache.MetaObjectToName(got).String(), time.Now())
			written++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return written
}

func (s *shift) writeStatus(pg *vcv1beta1.PodGroup) (*vcv1beta1.PodGroup, error) {
	c := s.c
	if err := c.Guard(s.ctx); err != nil {
		return nil, err
	}
	got, err := c.cfg.Volcano.SchedulingV1beta1().PodGroups(pg.Namespace).Update(s.ctx, pg, metav1.UpdateOptions{})
	if err != nil {
		c.metrics.statusFailures.WithLabelValues(reasonOf(err)).Inc()
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && s.ctx.Err() == nil {
			c.log.Warn("cannot write podgroup status; the next cycle tries again", "podgroup", toolscache.MetaObjectToName(pg).String(), "error", err)
		}
		return nil, fmt.Errorf("update podgroup %s/%s: %w", pg.Namespace, pg.Name, err)
	}
	return got, nil
}
