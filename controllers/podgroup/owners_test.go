package podgroup

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/shard"
)

// A bare pod inherits the annotations of its owner only: a ReplicaSet of the owner's name made
// again since (another UID) is not read as its owner.
func TestOwnerAnnotationsOnlyOfTheOwnersUID(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rs", UID: "owner-rs-again",
		Annotations: map[string]string{scheduling.VolcanoGroupMinMemberAnnotationKey: "5"}}}
	cfg := DefaultConfig()
	cfg.Kube, cfg.Volcano, cfg.Ownership = kubefake.NewSimpleClientset(rs), vcfake.NewSimpleClientset(), shard.HoldAll{S: 64}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	orphan := barePod(controlledBy("apps/v1", "ReplicaSet", "rs", "rs"))
	if got := c.ownerAnnotations(context.Background(), orphan); len(got) != 0 {
		t.Errorf("annotations %v inherited from another ReplicaSet of the owner's name", got)
	}
	owned := barePod(controlledBy("apps/v1", "ReplicaSet", "rs", "rs-again"))
	if got := c.ownerAnnotations(context.Background(), owned); got[scheduling.VolcanoGroupMinMemberAnnotationKey] != "5" {
		t.Errorf("annotations %v, want the owner's min member 5", got)
	}
}
