// Package kit holds what every ringfire controller would otherwise repeat:
// Volcano's default scheduler name, taking Commands (Commands), and the wording of a
// message that an Event tells again only when it changes (Wording). Metrics
// are registered all or none through internal/promreg.
package kit

import toolscache "k8s.io/client-go/tools/cache"

// DefaultSchedulerName is the scheduler of Volcano Jobs that name none, and
// the one whose pods the PodGroup controller and the gang scheduler serve,
// unless configured otherwise (`--scheduler-name`).
const DefaultSchedulerName = "volcano"

// JobSource is what a controller reads Volcano Jobs from: a shared informer, or the replica's
// cache.Jobs (every Job, in full for the held slots and as a summary for the others).
type JobSource interface {
	AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
	AddIndexers(toolscache.Indexers) error
	GetIndexer() toolscache.Indexer
	HasSynced() bool
}
