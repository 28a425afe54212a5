// Package sidebyside runs the same Volcano Jobs under real Volcano (vc-controller-manager and
// vc-scheduler as processes) and under ringfire (three replicas with the gang scheduler), each
// on a local control plane of its own with ringfire's CRDs, and compares what happened to them:
// the phases each Job went through, its retries and final counts, how each of its pods ended,
// the PodGroup and other objects it owned, the Events recorded on it. docs/sidebyside.md says
// how to run it and what it found.
//
//   - env.go: Env, a control plane with the Volcano API installed.
//   - volcano.go: StartVolcano (Volcano's programs come from e2e/volcano).
//   - ringfire.go: StartRingfire, also used by e2e/vcctltest.
//   - scenario.go: the scenario files of scenarios/.
//   - recorder.go: the watches that record what each side did.
//   - run.go: Run, which plays the scenarios on one side.
//   - result.go: a side's Result of a scenario, the rows of the table.
//   - compare.go: the comparison, the allow-list (allow.yaml) and the report.
package sidebyside
