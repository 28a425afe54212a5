// Package certtest runs the ring's etcd as deploy/etcd runs it, three members with client and
// peer certificates required, started through `ringfire etcd-member`, and three replicas
// (`ringfire run`, as the ServiceAccount of deploy/ringfire) on a local control plane under a
// load of small Jobs. The certificates are the Secrets `ringfire certs` prints, written into a
// directory per mounted Secret as kubelet writes a Secret volume (the members' and the
// replicas'). Then it:
//
//   - (a) renews by the runbook: the CA Secret into `ringfire certs --renew --ca -`, whose two
//     Secrets are "applied" (written again, swapped in one rename as kubelet does). Each
//     member presents the new certificate in its next handshake and the replicas' expiry
//     metric shows the new files and the server's new certificate, with nothing restarted.
//     The first certificates end 75 s after they were made, so whatever still used them
//     afterwards would fail.
//   - (b) after they ended, a member loses its data and is brought back by the runbook of
//     docs/operations.md (member remove, member add, start again; the test makes etcdctl's
//     calls with the clientv3 Cluster API, one to one, as the tools have no etcdctl):
//     `ringfire etcd-member` refuses to start it while it is removed and not added, starts it
//     as existing once added, it rejoins, and the replicas reach it again.
//
// Throughout, no slot is without a holder past the lease TTL (polled from etcd), no replica
// fences or restarts, no member rejects a TLS connection, and every Job completes.
//
// The tests need the local control plane (e2e/cluster): run them with `make test`, or with
// RINGFIRE_TOOLS_BIN and RINGFIRE_E2E=1 set.
package certtest
