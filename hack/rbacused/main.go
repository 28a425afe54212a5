// Command rbacused checks the ClusterRoles of deploy/ringfire/10-rbac.yaml (every replica's)
// and deploy/components/gang-scheduler (the gang scheduler's) against what the replicas of the
// end-to-end suites used: the files the suites wrote into $RINGFIRE_RBAC_USED_DIR (e2e/stack),
// the scheduler's apart (deploy.CheckRoles). It fails naming every permission granted and never
// used (but deploy.UnexercisedGrants) and every one used and not granted. `make test` runs it
// after every suite passed.
//
//	go run ./hack/rbacused -dir .ringfire/rbac-used
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ringfire/ringfire/deploy"
)

func main() {
	dir := flag.String("dir", os.Getenv("RINGFIRE_RBAC_USED_DIR"), "the directory the suites wrote what they used into")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "rbacused:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	if dir == "" {
		return fmt.Errorf("no directory: set -dir or RINGFIRE_RBAC_USED_DIR")
	}
	usedReplicas, usedScheduler, files, err := deploy.ReadUsed(dir)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("%s holds no record of use: run the suites with RINGFIRE_RBAC_USED_DIR=%s", dir, dir)
	}
	replica, err := deploy.Granted()
	if err != nil {
		return err
	}
	scheduler, err := deploy.SchedulerGranted()
	if err != nil {
		return err
	}
	check := deploy.CheckRoles(replica, scheduler, usedReplicas, usedScheduler, deploy.UnexercisedGrants)
	for _, role := range []struct {
		name  string
		check deploy.RoleCheck
	}{{"deploy/ringfire/10-rbac.yaml", check.Replica}, {"deploy/" + deploy.SchedulerDir + " (the gang scheduler's)", check.Scheduler}} {
		for _, p := range role.check.Unused {
			fmt.Printf("%s: granted and never used: %s\n", role.name, p)
		}
		for _, p := range role.check.Ungranted {
			fmt.Printf("%s: used and not granted: %s\n", role.name, p)
		}
		for _, p := range role.check.Allowed {
			fmt.Printf("%s: granted, not used by the suites, allowed: %s (%s)\n", role.name, p, deploy.UnexercisedGrants[p])
		}
	}
	for _, p := range check.SchedulerOnly {
		fmt.Printf("deploy/ringfire/10-rbac.yaml: granted to every replica, used by the gang scheduler alone in the suites: %s\n", p)
	}
	if !check.OK() {
		return fmt.Errorf("the ClusterRoles do not match what the replicas of %d test binaries used: %d granted and never used, %d used and not granted",
			len(files), len(check.Replica.Unused)+len(check.Scheduler.Unused), len(check.Replica.Ungranted)+len(check.Scheduler.Ungranted))
	}
	fmt.Printf("rbacused: the ClusterRoles grant the %d and %d permissions the replicas and the gang scheduler of %d test binaries used, and %d allowed unexercised\n",
		len(replica)-len(check.Replica.Allowed), len(scheduler)-len(check.Scheduler.Allowed), len(files), len(check.Replica.Allowed)+len(check.Scheduler.Allowed))
	return nil
}
