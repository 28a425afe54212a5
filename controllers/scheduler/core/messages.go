package core

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Why a gang waits, worded as Volcano and kube-scheduler word it:
//
//	2/8 tasks in gang unschedulable: pod group is not ready, 0 bound,
//	6 placeable, 8 minAvailable; 2 tasks: 0/4 nodes are unavailable:
//	3 Insufficient cpu, 1 node(s) had untolerated taint {gpu: true}

// histogram counts reasons; its text lists them most frequent first.
type histogram map[string]int

func (h histogram) String() string {
	type entry struct {
		reason string
		n      int
	}
	entries := make([]entry, 0, len(h))
	for r, n := range h {
		entries = append(entries, entry{r, n})
	}
	slices.SortFunc(entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.reason, b.reason))
	})
	parts := make([]string, len(entries))
	for i, e := range entries {
		parts[i] = fmt.Sprintf("%d %s", e.n, e.reason)
	}
	return strings.Join(parts, ", ")
}

// fitError says why no node can take the task right now.
func (c *cycle) fitError(t *taskState) string {
	sig := c.signatureOf(t.sig)
	h := histogram{}
	for i := range c.nodes.nodes {
		if r := sig.reasons[i]; r != "" {
			h[r]++
			continue
		}
		free := c.nodes.freeOf(i)
		short := false
		for d, x := range t.req {
			if x > free[d] {
				h[insufficient(c.ix.names[d])]++
				short = true
			}
		}
		if t.missing != "" {
			h[insufficient(t.missing)]++
			short = true
		}
		if !short && t.aff != nil {
			if r := c.pods.reason(t.aff, i); r != "" {
				h[r]++
			}
		}
	}
	if len(h) == 0 {
		return fmt.Sprintf("0/%d nodes are unavailable", len(c.nodes.nodes))
	}
	return fmt.Sprintf("0/%d nodes are unavailable: %s", len(c.nodes.nodes), h)
}

// taskFailures collects, per distinct reason, how many of a gang's tasks
// could not be placed.
type taskFailures struct {
	count   int
	reasons histogram
}

func (f *taskFailures) add(reason string, n int) {
	if n <= 0 {
		return
	}
	if f.reasons == nil {
		f.reasons = histogram{}
	}
	f.count += n
	f.reasons[reason] += n
}

func (f *taskFailures) String() string {
	type entry struct {
		reason string
		n      int
	}
	var entries []entry
	for r, n := range f.reasons {
		entries = append(entries, entry{r, n})
	}
	slices.SortFunc(entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.reason, b.reason))
	})
	parts := make([]string, len(entries))
	for i, e := range entries {
		noun := "tasks"
		if e.n == 1 {
			noun = "task"
		}
		parts[i] = fmt.Sprintf("%d %s: %s", e.n, noun, e.reason)
	}
	return strings.Join(parts, "; ")
}

// gangMessage is the Unschedulable message of a gang that could not be
// completed: unplaced of total tasks, with what was placed and why the rest
// was not.
func gangMessage(j *jobState, placeable int, f *taskFailures) string {
	total := int(j.placed) + len(j.tasks)
	for _, t := range j.tasks {
		if t.placed {
			total--
		}
	}
	msg := fmt.Sprintf("%d/%d tasks in gang unschedulable: pod group is not ready, %d bound, %d placeable, %d minAvailable",
		f.count, total, j.placed, placeable, j.job.MinMember)
	if len(f.reasons) > 0 {
		msg += "; " + f.String()
	}
	return msg
}
