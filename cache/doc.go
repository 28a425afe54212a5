// Package cache keeps a replica's view of the cluster, each kind watched
// once and handed to the controllers through typed accessors: cluster-wide
// informers for Commands, Queues, PriorityClasses and CronJobs, and every
// PodGroup as a summary for counting by queue (QueuePodGroups); every Job,
// in full for the held slots and as a summary for the others (Jobs); and,
// for the objects Jobs own (pods, PodGroups, PVCs, Services, ConfigMaps,
// NetworkPolicies), informers that watch only the slots this replica holds
// (Owned). Secrets are never watched: the one a Job owns (the ssh plugin's)
// is reached by name.
//
// The owned objects carry the label ringfire.io/slot. When the replica gains
// slots, the cache starts one reflector per resource for just those slots
// (label selector "ringfire.io/slot in (...)"), so the slots it already
// holds are not listed again; when it loses slots it drops their objects from
// memory at once, and stops a reflector once none of its slots is held. All
// reflectors of a resource feed one index, so lookups do not care which
// reflector brought an object.
//
// Objects of Volcano Jobs made before the switch to ringfire carry no slot
// label; when slots are gained the cache adopts those of the slots' Jobs
// (adopt.go: label them, then let the slots become ready).
package cache
