// Package monitoringtest checks deploy/monitoring against a real Prometheus:
// the local control plane, three ringfire replicas as processes running
// every controller and the gang scheduler, and Prometheus (built by
// e2e/tools/build.sh) scraping them every second and evaluating the alert
// rules every second.
//
// With Jobs and a CronJob run to give the metrics data, the test checks that
// every dashboard query (template variables filled in as Grafana would) is
// accepted by Prometheus without warnings and shows data over the run, short
// of a listed few that a healthy run leaves empty; that every metric a query
// or rule names is exported by the replicas; that every alert loads and
// evaluates with health "ok"; that nothing is pending or firing in the
// healthy ring; and that a replica killed with SIGKILL raises
// RingfireReplicaDown and RingfireMembersMissing. See docs/monitoring.md.
//
//	RINGFIRE_TOOLS_BIN=$(e2e/tools/build.sh | tail -n 1) RINGFIRE_E2E=1 \
//	  go test -race -count=1 -v ./e2e/monitoringtest/
package monitoringtest
