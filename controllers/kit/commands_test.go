package kit

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"
)

// A Command runs once: the delete that takes it runs it; a retry that finds it
// gone runs it again only if this replica took it; a Command taken elsewhere
// (gone, never taken here) does not run; a fenced replica deletes nothing.
func TestCommandsRunOnce(t *testing.T) {
	ctx := context.Background()
	cmd := &bus.Command{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "abort", UID: "u1"}}
	vc := vcfake.NewSimpleClientset(cmd)
	var c Commands

	fenced := errors.New("not the owner")
	if _, _, err := c.Take(ctx, vc, *RefOf(cmd), func(context.Context) error { return fenced }); !errors.Is(err, fenced) {
		t.Fatalf("a fenced take: %v, want the guard's error", err)
	}
	if _, err := vc.BusV1alpha1().Commands("ns").Get(ctx, "abort", metav1.GetOptions{}); err != nil {
		t.Fatalf("a fenced take deleted the Command: %v", err)
	}
	run, took, err := c.Take(ctx, vc, *RefOf(cmd), nil)
	if err != nil || !run || !took {
		t.Fatalf("first take: run %v took %v err %v; want true, true, nil", run, took, err)
	}
	run, took, err = c.Take(ctx, vc, *RefOf(cmd), nil)
	if err != nil || !run || took {
		t.Fatalf("a retry after our delete: run %v took %v err %v; want true, false, nil", run, took, err)
	}
	var other Commands // another replica, with a stale copy of the Command
	run, took, err = other.Take(ctx, vc, *RefOf(cmd), nil)
	if err != nil || run || took {
		t.Fatalf("a Command taken elsewhere: run %v took %v err %v; want false, false, nil", run, took, err)
	}
	c.Forget(cmd.UID)
	if c.Took(cmd.UID) {
		t.Fatal("a forgotten Command is still remembered")
	}
}
