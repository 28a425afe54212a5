// Command ringfire is the one binary of ringfire:
//
//	ringfire run           a replica: joins the ring and works on its slots
//	ringfire ring status   the members, their slots and the slots in motion
//	ringfire dev up|down   a local cluster for trying it out
//	ringfire certs         TLS material of the ring's etcd (deploy/etcd)
//	ringfire etcd-member   starts a member of the ring's etcd (deploy/etcd)
//	ringfire version       the build: version, VCS revision, Go version
//
// Flags, configuration and wiring live here; the work lives in the packages.
package main

import (
	"fmt"
	"os"
	_ "time/tzdata" // CronJob time zones in an image without a zoneinfo database

	"github.com/ringfire/ringfire/internal/version"
)

const usage = `ringfire: a sharded batch-job controller manager serving the Volcano API.

Usage:
  ringfire run [flags]            run a replica (without --etcd-endpoints: on an embedded etcd, a ring of one)
  ringfire ring status [flags]    print the ring: members, slots held and assigned, slots in motion
  ringfire dev up|down [flags]    a local cluster to try ringfire: control plane, fake nodes, replicas, sample jobs
  ringfire certs [flags]          the ring etcd's TLS Secrets (deploy/etcd), for 'ringfire certs | kubectl apply -f -'
                                  (--renew --ca -: new server and client certificates under the kept CA)
  ringfire etcd-member -- etcd ...  run an etcd member of deploy/etcd, choosing --initial-cluster-state
  ringfire version                the build: version, VCS revision, Go version (also --version)

Run 'ringfire <command> -h' for a command's flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "run":
		err = runCommand(args)
	case "ring":
		err = ringCommand(args)
	case "dev":
		err = devCommand(args)
	case "certs":
		err = certsCommand(args)
	case "etcd-member":
		err = etcdMemberCommand(args)
	case "version", "--version", "-version":
		fmt.Println(version.Get())
		return
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "ringfire: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ringfire:", err)
		os.Exit(1)
	}
}
