// Package migrationtest switches a live cluster from Volcano to ringfire and
// back, with Jobs in flight, as docs/migration.md tells an operator to: real
// vc-controller-manager and vc-scheduler run 200 Jobs on Volcano's own CRDs
// (installed as a Helm release leaves them); vc-controller-manager stops;
// three ringfire replicas take over on those CRDs, then on ringfire's own
// applied over them; and vc-controller-manager comes back once ringfire
// stops. The API server's audit log is the record of what every side
// created and deleted.
//
// It needs Volcano's programs and CRDs (see e2e/volcano) and is skipped
// without them.
package migrationtest
