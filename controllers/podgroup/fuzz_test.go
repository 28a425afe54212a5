package podgroup

import (
	"strings"
	"testing"

	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	topology "volcano.sh/apis/pkg/apis/topology/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/state"
)

// FuzzOwnerAnnotations: whatever a bare pod's owner says in its group-min-member annotation and
// the pod in its network-topology annotations (both the user's), reading them never panics; the
// gang size is 1 or more and at most the largest int32, refused (MinMemberTooLarge) past
// state.MaxReplicas with a message naming the annotation; the topology mode is hard or soft.
func FuzzOwnerAnnotations(f *testing.F) {
	for _, s := range []string{"", "1", "0", "-1", "3", "2147483647", "2147483648", "9999999999999", "x", "+2", " 2", "0x10"} {
		f.Add(s, "soft", s)
	}
	f.Add("4", "HARD", "2")
	f.Add("4", "", "")
	f.Fuzz(func(t *testing.T, minMember, mode, tier string) {
		owner := map[string]string{scheduling.VolcanoGroupMinMemberAnnotationKey: minMember}
		n := minMemberOf(owner)
		if n < 0 {
			t.Fatalf("minMemberOf(%q) = %d", minMember, n)
		}
		msg := MinMemberTooLarge(owner)
		if (msg != "") != (n > state.MaxReplicas) {
			t.Fatalf("minMember %q (%d): refused %q, limit %d", minMember, n, msg, state.MaxReplicas)
		}
		if msg != "" && !strings.Contains(msg, scheduling.VolcanoGroupMinMemberAnnotationKey) {
			t.Fatalf("refusal %q does not name the annotation", msg)
		}
		nt := networkTopology(map[string]string{
			topology.NetworkTopologyModeAnnotationKey:        mode,
			topology.NetworkTopologyHighestTierAnnotationKey: tier,
		})
		if nt == nil || (nt.Mode != scheduling.HardNetworkTopologyMode && nt.Mode != scheduling.SoftNetworkTopologyMode) {
			t.Fatalf("networkTopology(%q, %q) = %+v", mode, tier, nt)
		}
	})
}
