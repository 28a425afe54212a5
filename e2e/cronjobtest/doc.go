// Package cronjobtest holds the end-to-end tests of the CronJob controller: a real API server
// with the Volcano CRDs, KWOK nodes, the stand-in admitting and binding, and three ringfire
// replicas over a real etcd. Schedules run every minute, so the tests run side by side on one
// stack and wait for minute boundaries; their bounds are generous and the delays they measure
// (scheduled time → Job seen) go to the test log.
package cronjobtest
