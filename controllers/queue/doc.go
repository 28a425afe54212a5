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
//   - Events on a state change by a Command: reason OpenQueue "Open queue succeed", reason
//     CloseQueue "Close queue succeed". A request that fails MaxRequeue times is dropped with a
//     Warning event whose reason is the action, as Volcano records it.
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
//   - Hierarchical queues (spec.parent, closing children with their parent) are not followed.
//
// # Sharding and memory
//
// A Queue's key is its name; its slot is shard.SlotOf(name). One shard.Dispatcher keyed by
// queue name runs the requests of held slots, in order per queue. The controller has its own
// informers: Queues, Commands, and every PodGroup of the cluster, since any PodGroup may name
// any queue. The PodGroup informer keeps only name, namespace, UID, resourceVersion, queue and
// phase (a transform), a few hundred bytes per PodGroup, on every replica. Counting from a
// per-slot PodGroup cache would need the PodGroups labelled with their queue's slot.
package queue
