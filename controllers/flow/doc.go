// Package flow is ringfire's controllers for Volcano's workflow API, flow.volcano.sh/v1alpha1:
// JobFlow (Flows) and JobTemplate (Templates), on the keys of the slots this replica holds.
// docs/jobflow.md has the behaviour, where it differs from Volcano, and the numbers measured.
//
// # A JobFlow
//
// A JobTemplate holds a Job spec. A JobFlow lists steps; each step names a template (the step's
// name is the template's) and the steps it depends on. Its key is namespace/name and its slot
// shard.SlotOf(key); one shard.Dispatcher runs its reconciles one at a time. A reconcile reads
// the flow (or the status this replica last wrote, until the informer catches up) and the Jobs
// it controls (an index of the replica's Job cache by controller UID: the Jobs sit on other
// slots, so they are summaries there, which keep what a flow reports), then:
//
//  1. if the flow has Succeeded and its jobRetainPolicy is delete, deletes its Jobs and stops;
//  2. checks the dependencies (NewGraph): an unknown step or a cycle is told in an InvalidFlow
//     Warning and nothing is made until the spec is fixed;
//  3. unless the flow has Failed or Succeeded, creates the Job of each step (JobFor:
//     "<flow>-<step>", the template's spec) that is not done (no Job, and no Job that Completed
//     and was deleted since) and whose dependencies are done, after reading the flow afresh
//     from the API server; a step whose template does not exist waits for it, told in a
//     TemplateNotFound Warning; a patch or probe a step sets is not acted on, as under
//     Volcano, and told in an Ignored Warning;
//  4. computes the status as Volcano reports it (Status) and the flow's phase (NextPhase), and
//     writes it if it changed: at once when the flow's phase moved, else merged over
//     Config.StatusCoalesce.
//
// # Writes a stale owner cannot land
//
// Every write is preceded by shard.CheckOwner. Job names are deterministic per step, so a
// create from a retry or a replica that lost the slot without knowing it finds AlreadyExists;
// a create or delete issued is remembered until the informer shows it, so it is not issued
// again meanwhile; status updates carry the resourceVersion they were computed from; deletes
// carry the Job's UID as a precondition. A flow deleted takes its Jobs with it through their
// owner references (the garbage collector), as under Volcano.
//
// # A JobTemplate
//
// Templates writes into status.jobDependsOnList the names of the Jobs made from the template
// (label volcano.sh/createdByJobTemplate), sorted, when they change.
package flow
