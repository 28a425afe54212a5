// Package queue is ringfire's Queue controller: it keeps each scheduling.volcano.sh Queue's
// status.state and PodGroup counts as Volcano's queue controller does, and runs the OpenQueue
// and CloseQueue Commands that target a Queue, on the queues of the slots this replica holds.
//
// # Behaviour (Volcano's pkg/controllers/queue)
//
//   - States Open, Closing, Closed, Unknown; the table is NextState. A new queue (no state) is
//     written Open. CloseQueue closes a queue with no PodGroup at once and leaves one with
//     PodGroups Closing; a Closing queue becomes Closed when its last PodGroup is deleted
//     (whatever the PodGroups' phases, Completed included). OpenQueue opens from any state.
//   - The root queue of Volcano's hierarchy is never closed (a Warning event says so). The
//     default queue may be closed, as in Volcano; only its deletion is refused there, by a
//     webhook, which is outside this controller.
//   - A Command whose target is a Queue is deleted when taken (with a UID precondition), with a
//     CommandIssued event on the queue; then its action runs. It runs at most once: when the
//     delete finds the Command already gone, the action runs only if this controller deleted it
//     in an earlier try. An action a Queue does not know is removed with a Warning event and the
//     queue is synced, as Volcano syncs on any other action.
//   - A Command that names its queue by UID (vcctl sets target.uid) acts only on that queue: one
//     made for an earlier queue of the name, deleted and made again, is taken without its action
//     running, with a Warning event (StaleCommand). One with no UID acts on whichever queue has
//     the name, as in Volcano. A Command for a queue the cache has not seen yet is checked with
//     the API server and retried until the cache has it.
//   - Events on a state change by a Command: reason OpenQueue "Open queue succeed", reason
//     CloseQueue "Close queue succeed". A request that fails MaxRequeue times is dropped with a
//     Warning event whose reason is the action, as Volcano records it.
//
// # Hierarchical queues
//
//   - A queue's parent is spec.parent; an empty one is the root queue, and the controller writes
//     spec.parent: root into it, as Volcano's does. The root queue (installed with the CRDs,
//     as Volcano's scheduler creates it) has no parent and is never closed.
//   - A queue follows its parent (FollowParent): when the parent is Closed or Closing, the queue
//     closes too (Closed, or Closing while it has PodGroups), marked with the annotation
//     volcano.sh/closed-by-parent: "true"; so do its own children in turn. When the parent opens
//     again, the queues it closed open again; one closed by its own Command stays closed.
//   - OpenQueue on a queue whose parent is Closed or Closing is refused with a Warning event
//     (reason OpenQueue) "Failed to open queue c because its parent queue p is closed. Open the
//     parent queue first." An OpenQueue that runs sets the annotation to "false".
//   - ringfire.io/has-children: "true" on a queue that some queue names as its parent; a leaf has
//     none. This label and the two below are read by ringfire's admission policies (deploy/crds),
//     which take the labelled Queues as their parameters. A Job on a labelled queue is refused,
//     and so is deleting one. The Job controller also holds a Job that has not started on a
//     queue with children.
//   - ringfire.io/not-open: "true" on a queue whose state is not Open (Closed, Closing, Unknown).
//     A Job on a labelled queue that is not Open is refused, as Volcano's webhook refuses it. The
//     label is written before the state leaves Open and removed in the sync after the state is
//     Open again, so the policy, which reads the labelled queue's state, misses no closed queue.
//   - ringfire.io/at-max-depth: "true" on a queue MaxDepth (5) queues below root, or in a cycle
//     of parents. A queue naming it as its parent is refused: it would be deeper than Volcano's
//     webhook allows. A queue that comes, goes or moves resyncs every queue below it.
//   - A queue whose parents loop back to it, and a queue whose parent does not exist (other than
//     root), get a Warning event (ParentCycle, MissingParent) once per generation; a queue in a
//     cycle follows no parent (two queues each closed under the other could never open). A
//     queue naming itself as its parent is refused by the CRD.
//   - Each queue's owner keeps its own queue only: a queue is synced when its parent changes
//     state, and a parent when a child comes, goes or moves (the ByParent index).
//
// # Where ringfire differs
//
//   - The PodGroup counts (pending, running, unknown, inqueue, completed) are written to the
//     status, as Volcano did up to v1.10. Volcano v1.11 stopped persisting them (they became
//     metrics) because a write per PodGroup transition loaded the API server. ringfire keeps them
//     and paces them instead: a write that only refreshes counts waits until StatusInterval has
//     passed since the queue's last write; state changes are written at once.
//   - Writes are UpdateStatus with the resourceVersion read (Volcano uses server-side apply of
//     the state alone). The other status fields (allocated, reservation) are written back as
//     read, so a scheduler's concurrent write makes this one conflict and retry, never lose it.
//   - OpenQueue under a closed parent is refused at once. Volcano's controller returns an error
//     and retries the request with backoff (about 160 s over 15 tries) before dropping it with a
//     Warning event, so a parent opened within that time also opens such a child.
//   - The closed-by-parent annotation is written only when it changes meaning: Volcano's
//     controller writes "false" on every queue it opens, annotated or not.
//   - The update that closes a cycle of parents is not refused at admission: refusing it needs
//     the new parent's ancestors, which no admission policy can read at a reasonable cost
//     (docs/jobs.md, "Admission policies"). Volcano's webhook lets it through too (its depth walk
//     reads the stored parents, where the cycle is not closed yet). The controller reports it
//     (ParentCycle), the Job controller holds Jobs on a queue under a cycle, and, as in Volcano,
//     no queue can then be put under a queue of the cycle (ringfire.io/at-max-depth).
//   - Volcano applies any Command to whichever queue has the name. ringfire checks the UID
//     (above), and its admission policy ringfire-queue-command (deploy/crds) accepts a Command
//     that targets a Queue (TargetsQueue) only from a user who may update that Queue, where
//     Volcano lets anyone who may create a Command in any namespace open or close any queue
//     (docs/jobs.md, "Who may steer a Queue").
//
// # Sharding and memory
//
// A Queue's key is its name; its slot is shard.SlotOf(name). One shard.Dispatcher keyed by
// queue name runs the requests of held slots, in order per queue. The controller has its own
// informers: Queues, Commands, and every PodGroup of the cluster, since any PodGroup may name
// any queue. The PodGroup informer keeps only name, namespace, UID, resourceVersion, queue and
// phase (a transform), a few hundred bytes per PodGroup, on every replica. Counting from a
// per-slot PodGroup cache would need the PodGroups labelled with their queue's slot.
//
// The counts are kept as the PodGroup events come (an add counts one in, an update moves one
// from its old phase or queue to the new, a delete counts one out), one entry per queue that
// has PodGroups. A reconcile reads its queue's counts in constant time. Counting the queue's
// PodGroups from the cache on each reconcile instead cost the holder of a queue with 10,000
// PodGroups 1.9 GB of allocation over the scale benchmark's run (22 % of all it allocated),
// and made it the largest replica.
package queue
