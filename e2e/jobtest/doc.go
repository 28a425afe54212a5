// Package jobtest holds the end-to-end tests of the Job controller: real
// API server, KWOK nodes, ringfire replicas over a real etcd.
package jobtest
