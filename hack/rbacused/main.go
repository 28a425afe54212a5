// Command rbacused checks the ClusterRole of deploy/ringfire/10-rbac.yaml against what the
// replicas of the end-to-end suites used: the files the suites wrote into
// $RINGFIRE_RBAC_USED_DIR (e2e/stack). It fails naming every permission granted and never
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
	used, files, err := deploy.ReadUsed(dir)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("%s holds no record of use: run the suites with RINGFIRE_RBAC_USED_DIR=%s", dir, dir)
	}
	granted, err := deploy.Granted()
	if err != nil {
		return err
	}
	check := deploy.CheckRole(granted, used, deploy.UnexercisedGrants)
	for _, p := range check.Unused {
		fmt.Printf("granted and never used: %s\n", p)
	}
	for _, p := range check.Ungranted {
		fmt.Printf("used and not granted: %s\n", p)
	}
	for _, p := range check.Allowed {
		fmt.Printf("granted, not used by the suites, allowed: %s (%s)\n", p, deploy.UnexercisedGrants[p])
	}
	if !check.OK() {
		return fmt.Errorf("deploy/ringfire/10-rbac.yaml does not match what the replicas of %d test binaries used: %d granted and never used, %d used and not granted",
			len(files), len(check.Unused), len(check.Ungranted))
	}
	fmt.Printf("rbacused: the ClusterRole grants the %d permissions the replicas of %d test binaries used, and %d allowed unexercised\n",
		len(granted)-len(check.Allowed), len(files), len(check.Allowed))
	return nil
}
