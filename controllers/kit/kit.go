// Package kit holds what every ringfire controller would otherwise repeat:
// Volcano's default scheduler name, taking Commands (Commands), and the wording of a
// message that an Event tells again only when it changes (Wording). Metrics
// are registered all or none through internal/promreg.
package kit

// DefaultSchedulerName is the scheduler of Volcano Jobs that name none, and
// the one whose pods the PodGroup controller and the gang scheduler serve,
// unless configured otherwise (`--scheduler-name`).
const DefaultSchedulerName = "volcano"
