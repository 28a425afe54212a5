// Package plugins is ringfire's take on the job plugins of Volcano's controller (svc, ssh, env,
// pytorch, mpi, tensorflow): the same names, arguments and effects on pods and objects, but pure.
// A plugin mutates the pod it is handed and returns the objects it wants written (Changes) instead
// of calling the API server; the controller makes the writes.
//
// The hooks are called as in Volcano: OnPodCreate on every pod before it is created; OnJobAdd while
// the Job is being initiated (Pending), OnJobUpdate on later syncs, OnJobDelete when the Job's pods
// are killed (which in Volcano also happens when a Job finishes, so the svc and ssh objects go away
// with the pods and come back on a restart). Set runs the plugins a Job names and keeps Volcano's
// marks in status.controlledResources ("plugin-<name>": "<name>") so that OnJobAdd and OnJobDelete
// run once per Job life.
//
// Where ringfire differs from Volcano, and why:
//
//   - Arguments are parsed with Go's flag package as Volcano does, so every spelling Volcano accepts
//     means the same here; but an unknown flag, a bad value or a stray argument is an error (the
//     controller reports it on the Job) instead of a log line and a silently ignored setting. An
//     unknown plugin name is an error in both.
//   - Plugins run in name order, not in Go's random map order, so two builds of one pod are equal.
//   - The ssh Secret is created when absent and never overwritten (Volcano overwrites it when the
//     plugin has not yet marked the Job): a replica that lost its status write must not change the
//     key under pods that already mount it.
//   - Volcano's mpi plugin panics on a worker task with no replicas; here MPI_HOST is empty.
//
// The plugins that tensorflow, mpi and pytorch need (svc, and ssh for mpi) are added to the Job by
// state.Defaults, as Volcano's mutating webhook does; a Set does not add them by itself.
package plugins
