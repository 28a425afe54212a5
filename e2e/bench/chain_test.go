package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"
)

// chain records the steps between a Job's create and its pods that a run
// can see from outside: when its PodGroup appeared, and when the PodGroup
// was first seen admitted (phase Inqueue or later). A slow window or a slow
// failover then shows which step waited: the controller's PodGroup create,
// the scheduler's admission, or the controller's pod creates.
type chain struct {
	mu       sync.Mutex
	pg       map[string]time.Time // Job name → its PodGroup first seen
	admitted map[string]time.Time // Job name → its PodGroup first seen admitted
}

// watchChain watches the PodGroups of namespace ns until ctx ends.
func watchChain(ctx context.Context, vc vcclient.Interface, ns string) (*chain, error) {
	pgs := vc.SchedulingV1beta1().PodGroups(ns)
	w, err := watchFromNow(ctx, "podgroups", func(ctx context.Context, opts metav1.ListOptions) (metav1.ListInterface, error) {
		return pgs.List(ctx, opts)
	}, pgs.Watch)
	if err != nil {
		return nil, err
	}
	c := &chain{pg: map[string]time.Time{}, admitted: map[string]time.Time{}}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				if pg, isPG := ev.Object.(*scheduling.PodGroup); isPG && ev.Type != watch.Deleted {
					c.saw(pg, time.Now())
				}
			}
		}
	}()
	return c, nil
}

func (c *chain) saw(pg *scheduling.PodGroup, at time.Time) {
	job := ""
	for _, ref := range pg.OwnerReferences {
		if ref.Kind == "Job" {
			job = ref.Name
		}
	}
	if job == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, seen := c.pg[job]; !seen {
		c.pg[job] = at
	}
	if _, seen := c.admitted[job]; !seen && pg.Status.Phase != "" && pg.Status.Phase != scheduling.PodGroupPending {
		c.admitted[job] = at
	}
}

// steps returns, for a Job created at created whose last pod was seen at
// done, the three steps' durations; ok is false if a step was not seen.
func (c *chain) steps(job string, created, done time.Time) (s [3]time.Duration, ok bool) {
	if c == nil || created.IsZero() || done.IsZero() {
		return s, false
	}
	c.mu.Lock()
	pg, admitted := c.pg[job], c.admitted[job]
	c.mu.Unlock()
	if pg.IsZero() || admitted.IsZero() {
		return s, false
	}
	return [3]time.Duration{max(0, pg.Sub(created)), max(0, admitted.Sub(pg)), max(0, done.Sub(admitted))}, true
}

// stepNames name the steps of chain.steps.
var stepNames = [3]string{"create→pg", "pg→admitted", "admitted→pods"}

// stepsLine describes a set of Jobs' steps: each step's p50 and max.
func stepsLine(all [][3]time.Duration) string {
	if len(all) == 0 {
		return "steps not seen"
	}
	var b strings.Builder
	for i, name := range stepNames {
		if i > 0 {
			b.WriteString(", ")
		}
		p50, most := stepStats(all, i)
		fmt.Fprintf(&b, "%s p50 %.2fs max %.2fs", name, p50.Seconds(), most.Seconds())
	}
	return b.String()
}

// stepStats is the p50 and the max of step i over a non-empty set of Jobs'
// steps.
func stepStats(all [][3]time.Duration, i int) (p50, most time.Duration) {
	ds := make([]time.Duration, 0, len(all))
	for _, s := range all {
		ds = append(ds, s[i])
	}
	slices.Sort(ds)
	return percentile(ds, 50), ds[len(ds)-1]
}
