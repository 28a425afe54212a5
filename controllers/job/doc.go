// Package job is ringfire's Job controller: it reconciles batch.volcano.sh
// Jobs as Volcano's job controller does, on the keys of the slots this
// replica holds.
//
// Every request for a Job (an event of the Job, of one of its pods or of its
// PodGroup, a Command, a delayed policy action, a TTL check) goes through one
// shard.Dispatcher mailbox per Job key, so the requests of a Job are handled
// one at a time and in order, and a slow Job holds up no other. A reconcile
// reads the cache, lets the pure plan package decide all it does (plan.Make,
// which asks the state package for the policies, the transition table and
// the completion rules), carries the plan out in one order (carryOut), and
// writes the status last.
//
// Every write is safe against a replica that lost the slot without knowing
// it yet: the reconcile context is the slot's, ownership is checked right
// before each write, updates carry the resourceVersion they were computed
// from, deletes carry UID and resourceVersion preconditions, and creates use
// deterministic names, AlreadyExists counting as done.
package job
