// Package schedtest holds the end-to-end tests of the gang scheduler: a real
// API server with KWOK nodes, the Job controller in ringfire replicas, and
// the scheduler controller started beside them, either alone (holding every
// slot) or as a ring singleton over real etcd.
package schedtest
