package core

// A gang's placements are tentative until it is complete: they take node
// resources and queue room at once (so the gang's later pods see them), and
// are either committed as bindings together or given back together, as
// Volcano's Statement does.

// statement is a gang's tentative placements: committed together or undone.
type statement struct {
	placed []placement
	// byShape counts the placements per task shape (few: gangs are mostly
	// alike); only is their shape while they all share one (-1 empty, -2
	// mixed).
	byShape []shapeCount
	only    int32
}

type placement struct {
	task *taskState
	node int
}

type shapeCount struct {
	shape int32
	n     int
}

// statement returns the cycle's statement, emptied.
func (c *cycle) statement() *statement {
	st := &c.stmt
	st.placed, st.byShape, st.only = st.placed[:0], st.byShape[:0], -1
	return st
}

func (st *statement) count(shape int32) int {
	for _, sc := range st.byShape {
		if sc.shape == shape {
			return sc.n
		}
	}
	return 0
}

func (st *statement) add(shape int32) {
	switch st.only {
	case -1:
		st.only = shape
	case shape:
	default:
		st.only = -2
	}
	for i := range st.byShape {
		if st.byShape[i].shape == shape {
			st.byShape[i].n++
			return
		}
	}
	st.byShape = append(st.byShape, shapeCount{shape, 1})
}

func (c *cycle) place(q *queueState, j *jobState, st *statement, t *taskState, node int) {
	c.nodes.take(node, t.req)
	if t.aff != nil {
		c.pods.move(t.aff, node, 1)
	}
	q.add(t.req, 1)
	t.placed = true
	j.placed++
	if j.minTask != nil {
		j.placedByTask[t.task.Name]++
	}
	st.placed = append(st.placed, placement{task: t, node: node})
	st.add(t.shape)
}

func (c *cycle) commit(q *queueState, j *jobState, st *statement) {
	for _, p := range st.placed {
		c.bindings = append(c.bindings, Binding{Pod: p.task.task.Key, Node: c.nodes.nodes[p.node].Name, PodGroup: j.key})
		j.bound++
	}
	for _, sc := range st.byShape {
		if c.capacity[sc.shape] >= 0 {
			c.capacity[sc.shape] = max(0, c.capacity[sc.shape]-sc.n)
		}
	}
	q.updateShare()
}

func (c *cycle) discard(q *queueState, j *jobState, st *statement) {
	for i := len(st.placed) - 1; i >= 0; i-- {
		p := st.placed[i]
		c.nodes.give(p.node, p.task.req)
		if p.task.aff != nil {
			c.pods.move(p.task.aff, p.node, -1)
		}
		q.add(p.task.req, -1)
		p.task.placed = false
		j.placed--
		if j.minTask != nil {
			j.placedByTask[p.task.task.Name]--
		}
	}
	c.stats.TasksDiscarded += len(st.placed)
}
