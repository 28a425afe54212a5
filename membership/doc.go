// Package membership keeps a replica in the ring's member set in etcd.
//
// A Member joins by registering <prefix>/members/<id> under a lease of its
// own, renews that lease every TTL/3 and, when it cannot renew, fences
// itself: its Session ends before the lease can expire at etcd, so no work
// tied to the session outlives the member's claim. After a loss it rejoins
// with a new lease. Watch reports the member set with the etcd revision it
// was read at.
//
// The package knows nothing of Kubernetes or of slots: it answers only "am I
// a member, until when at the latest, and who else is".
package membership
