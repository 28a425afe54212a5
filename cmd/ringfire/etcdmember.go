package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ringfire/ringfire/internal/etcdmember"
)

// etcdMemberCommand starts a member of the ring's etcd: `ringfire etcd-member -- etcd FLAGS`
// chooses --initial-cluster-state (internal/etcdmember: new while the cluster forms, existing
// for a member removed and added again after it lost its data) and runs etcd in its place.
// deploy/etcd runs it from a copy an init container makes (`ringfire etcd-member --copy-to`),
// as etcd's image has no shell.
func etcdMemberCommand(args []string) error {
	fs := flag.NewFlagSet("etcd-member", flag.ContinueOnError)
	copyTo := fs.String("copy-to", "", "copy this binary to the path and exit (an init container's job)")
	wait := fs.Duration("peer-wait", 5*time.Second, "how long to wait for another member to answer before taking the cluster as forming")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *copyTo != "" {
		return copySelf(*copyTo)
	}
	etcdArgs := fs.Args()
	if len(etcdArgs) == 0 {
		return fmt.Errorf("etcd-member: give etcd's command line after --: ringfire etcd-member -- etcd --name=... ")
	}
	state, why, err := etcdmember.Decide(context.Background(), etcdArgs[1:], *wait)
	if err != nil {
		return err
	}
	argv := etcdArgs
	if state != etcdmember.Keep {
		argv = append(etcdArgs[:1:1], etcdmember.WithState(etcdArgs[1:], state)...)
	}
	fmt.Fprintf(os.Stderr, "ringfire etcd-member: --initial-cluster-state=%s: %s\n", orAsGiven(state), why)
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	return syscall.Exec(path, argv, os.Environ())
}

func orAsGiven(s etcdmember.State) string {
	if s == etcdmember.Keep {
		return "(as given, unused)"
	}
	return string(s)
}

// copySelf copies the running binary to path, executable, in one rename.
func copySelf(path string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(self)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.CreateTemp(filepath.Dir(path), ".ringfire-*")
	if err != nil {
		return err
	}
	defer os.Remove(out.Name())
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Chmod(0o755); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(out.Name(), path)
}
