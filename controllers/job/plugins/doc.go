// Package plugins is ringfire's take on the job plugins of Volcano's controller (svc, ssh, env,
// pytorch, mpi, tensorflow, ray, hcclrank): the same names, arguments, defaults and effects on
// pods and objects, but pure. A plugin mutates the pod it is handed and returns the objects it
// wants written (Changes) instead of calling the API server; the controller makes the writes.
//
// The hooks are called as in Volcano: OnPodCreate on every pod before it is created; OnJobAdd while
// the Job is being initiated (Pending), OnJobUpdate on later syncs, OnJobDelete when the Job's pods
// are killed (which in Volcano also happens when a Job finishes, so the svc, ssh and ray objects go
// away with the pods and come back on a restart). Set runs the plugins a Job names and keeps
// Volcano's marks in status.controlledResources ("plugin-<name>": "<name>") so that OnJobAdd and
// OnJobDelete run once per Job life.
//
// Arguments are parsed as Volcano parses them: with Go's flag package, so every spelling Volcano
// accepts means the same here, and stopping at the first argument that is unknown, has a bad
// value or is not a flag; the flags before it take effect, it and the rest are ignored. Volcano
// only logs that; ringfire also tells it (Set.Ignored), and the controller puts it in an Event on
// the Job. The env plugin, which Volcano does not parse, ignores all of its arguments.
//
// Where ringfire differs from Volcano, and why:
//
//   - A port number outside 1–65535 given to a plugin that opens it on containers or a Service
//     (mpi, pytorch, ray) is an error on the Job at once. Volcano takes it and every pod or the
//     Service is refused by the API server; the end is the same (the Job never runs), the
//     message is clearer. An unknown plugin name is an error in both.
//   - Plugins run in name order, not in Go's random map order, so two builds of one pod are equal.
//     Two orders show: hcclrank runs before pytorch, so it ranks by task and index rather than
//     copying pytorch's RANK (they agree unless the master task has several replicas); svc runs
//     after pytorch, so pytorch's wait-for-master init container gets the hosts variables and
//     mount, which in Volcano it gets or not by chance.
//   - The ssh Secret is created when absent and never overwritten (Volcano overwrites it when the
//     plugin has not yet marked the Job): a replica that lost its status write must not change the
//     key under pods that already mount it.
//   - Volcano's mpi plugin panics on a master pod of a Job with no worker task; here the master
//     is left alone.
//   - The pytorch wait-for-master init container runs a script of ringfire's own (same image,
//     name, pull policy, check and timeout), and is not added to a pod that already has an init
//     container of that name.
//
// The plugins that tensorflow, mpi and pytorch need (svc, and ssh for mpi) are added to the Job by
// state.Defaults, as Volcano's mutating webhook does; a Set does not add them by itself. The ray
// plugin needs svc too, but Volcano does not add it: its guide tells the user to list it.
package plugins
