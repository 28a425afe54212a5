// Package podgroup is ringfire's PodGroup controller: like Volcano's pg controller
// (pkg/controllers/podgroup), it gives a PodGroup to every pod that asks for a served scheduler
// (Config.SchedulerNames, default "volcano") and has none, so that a bare pod, or the pods of a
// Deployment or StatefulSet, can be scheduled by a gang scheduler too.
//
// # Behaviour
//
// For such a pod it creates the PodGroup Name gives, podgroup-<UID of the pod's controller, or
// of the pod>, as Build describes it (minMember 1 or the owner's group-min-member, minResources
// the pod's requests as the quota counts them, queue from the scheduling.volcano.sh/queue-name
// annotation else "default", priority class, owner references so it is deleted with its owner),
// then sets the pod's scheduling.k8s.io/group-name annotation to it. A pod that already has
// the annotation, as every pod of a Volcano Job does, is left alone. An existing PodGroup is
// never changed. A PodGroup the API server refuses as invalid (a queue annotation that is no
// valid name) is not retried: a Warning event PodGroupInvalid on the pod says why.
//
// # Sharding and memory
//
// A pod's key is namespace/name and its slot shard.SlotOf(key); one shard.Dispatcher keyed by
// pod runs the pods of held slots. Bare pods carry no slot label, so the controller cannot watch
// only its slots: it watches, per served scheduler name, the pods with
// spec.schedulerName=<name>, spec.nodeName= (not yet bound) and no volcano.sh/job-name label,
// and drops managed fields and status from what it caches. A pod leaves that watch once bound,
// so every replica holds the cluster's pending bare pods of the served schedulers: what waits
// for a scheduler, not the running workload. The PodGroup carries the slot label of its pod's
// key, like every object ringfire creates.
//
// # Writes
//
// The PodGroup's name is deterministic, so a second create (a retry, a stale owner, a second
// pod of the same owner) meets AlreadyExists and counts as done. The annotation is a patch that
// carries the pod's UID and the resourceVersion read, and the ring ownership is checked right
// before each write.
package podgroup
