// Package flowtest holds the end-to-end tests of the JobFlow and JobTemplate controllers: a
// real API server with the Volcano CRDs, KWOK nodes whose pods run for a few seconds, the
// stand-in admitting and binding, and three ringfire replicas over a real etcd.
package flowtest
