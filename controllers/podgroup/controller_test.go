package podgroup

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/shard"
)

func TestControllerGivesBarePodsAPodGroup(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rs", UID: "owner-rs",
		Annotations: map[string]string{scheduling.VolcanoGroupMinMemberAnnotationKey: "2", "volcano.sh/x": "y"}}}
	bare := barePod()
	ofRS := barePod(controlledBy("apps/v1", "ReplicaSet", "rs", "rs"), func(p *corev1.Pod) { p.Name, p.UID = "rs-1", "rs-1-uid" })
	grouped := barePod(func(p *corev1.Pod) {
		p.Name, p.UID = "grouped", "grouped-uid"
		p.Annotations = map[string]string{scheduling.KubeGroupNameAnnotationKey: "mine"}
	})
	kube := kubefake.NewSimpleClientset(rs, bare, ofRS, grouped)
	vc := vcfake.NewSimpleClientset()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := DefaultConfig()
	cfg.Kube, cfg.Volcano, cfg.Ownership = kube, vc, shard.HoldAll{Ctx: ctx, S: 64}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	want := map[string]string{"p": "podgroup-pod-uid", "rs-1": "podgroup-owner-rs", "grouped": "mine"}
	deadline := time.Now().Add(5 * time.Second)
	for name, group := range want {
		for {
			pod, err := kube.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
			if err == nil && pod.Annotations[scheduling.KubeGroupNameAnnotationKey] == group {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("pod %s: group-name not %q within 5s", name, group)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	pgs, err := vc.SchedulingV1beta1().PodGroups("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*scheduling.PodGroup{}
	for i := range pgs.Items {
		got[pgs.Items[i].Name] = &pgs.Items[i]
	}
	if len(got) != 2 || got["podgroup-pod-uid"] == nil || got["podgroup-owner-rs"] == nil {
		t.Fatalf("podgroups %v, want the bare pod's and the ReplicaSet's", got)
	}
	if pg := got["podgroup-owner-rs"]; pg.Spec.MinMember != 2 || pg.Annotations["volcano.sh/x"] != "y" {
		t.Errorf("the ReplicaSet's annotations were not inherited: %+v", pg)
	}
}
