package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/ringfire/ringfire/shard"
)

func ringCommand(args []string) error {
	if len(args) == 0 || args[0] != "status" {
		return fmt.Errorf("usage: ringfire ring status [--etcd-endpoints=...]")
	}
	fs := flag.NewFlagSet("ring status", flag.ContinueOnError)
	var ef etcdFlags
	ef.register(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	endpoints, err := ef.endpointList()
	if err != nil {
		return err
	}
	client, err := ef.client(endpoints)
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	snap, err := shard.ReadSnapshot(ctx, client, ef.prefix)
	if err != nil {
		return err
	}
	printSnapshot(os.Stdout, snap)
	return nil
}

func printSnapshot(w io.Writer, snap shard.Snapshot) {
	fmt.Fprintf(w, "ring %s: %d slots, %d members, etcd revision %d\n\n", snap.Prefix, snap.Slots, len(snap.Members), snap.Revision)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tLEASE\tHELD\tASSIGNED")
	for _, m := range snap.Summary() {
		lease := "-"
		if m.Lease != 0 {
			lease = fmt.Sprintf("%x", int64(m.Lease))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", m.ID, lease, m.Held, m.Assigned)
	}
	tw.Flush()
	moving := snap.InMotion()
	fmt.Fprintf(w, "\nslots in motion: %d\n", len(moving))
	for i, s := range moving {
		if i == 20 {
			fmt.Fprintf(w, "  ... and %d more\n", len(moving)-20)
			break
		}
		from := snap.Holders[s]
		if from == "" {
			from = "(free)"
		}
		fmt.Fprintf(w, "  slot %d: %s -> %s\n", s, from, snap.Assignment[s])
	}
}
