package podgroup

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// A pending bare pod as large as a tenant can write it (1 MB of labels, 256 KB of
// annotations, 300 owner references, a megabyte of command and environment) is cached in at
// most PodBytes, and builds the same PodGroup as the pod whole.
func TestSlimPodIsBoundedAndBuildsTheSamePodGroup(t *testing.T) {
	pod := barePod(func(p *corev1.Pod) {
		p.Labels, p.Annotations = map[string]string{}, map[string]string{}
		for i := 0; i < 1<<20/80; i++ {
			p.Labels[fmt.Sprintf("tenant.example/l%07d", i)] = strings.Repeat("v", 60)
		}
		for i := 0; i < 256; i++ {
			p.Annotations[fmt.Sprintf("tenant.example/a%03d", i)] = strings.Repeat("a", 1000)
		}
		for _, k := range keptAnnotations {
			p.Annotations[k] = strings.Repeat("1", maxAnnotationValue)
		}
		p.Annotations[scheduling.KubeGroupNameAnnotationKey] = ""
		p.Annotations[scheduling.QueueNameAnnotationKey] = "q"
		for _, k := range keptLabels {
			p.Labels[k] = strings.Repeat("2", 63)
		}
		for i := range 300 {
			p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet",
				Name: fmt.Sprintf("rs-%d-%s", i, strings.Repeat("r", 240)), UID: types.UID(fmt.Sprintf("uid-%d", i)), Controller: ptr.To(i == 7)})
		}
		c := &p.Spec.Containers[0]
		c.Command = []string{strings.Repeat("c", 1<<20)}
		c.Env = []corev1.EnvVar{{Name: "E", Value: strings.Repeat("e", 1<<20)}}
		p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}
		p.Spec.PriorityClassName = "high"
		p.Status.Conditions = []corev1.PodCondition{{Type: "PodScheduled", Message: strings.Repeat("m", 1<<20)}}
	})
	whole, _ := json.Marshal(pod)
	obj, err := slimPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	slim := obj.(*corev1.Pod)
	raw, _ := json.Marshal(slim)
	t.Logf("a bare pod of %d bytes of JSON is cached as %d", len(whole), len(raw))
	if len(raw) > PodBytes {
		t.Errorf("cached as %d bytes, more than PodBytes (%d)", len(raw), PodBytes)
	}
	if len(slim.OwnerReferences) != maxOwners || slim.OwnerReferences[0].UID != "uid-7" {
		t.Errorf("%d owners kept, the first %s; want %d, the controller first", len(slim.OwnerReferences), slim.OwnerReferences[0].UID, maxOwners)
	}
	if why := Skip(slim, []string{"volcano"}); why != "" {
		t.Errorf("the cached pod is skipped: %s", why)
	}
	// The same PodGroup but for the owners past maxOwners, which the cached pod does not have.
	want, got := Build(pod, 5, nil), Build(slim, 5, nil)
	want.OwnerReferences, got.OwnerReferences = nil, nil
	if !reflect.DeepEqual(want, got) {
		t.Errorf("the PodGroup of the cached pod differs:\n got %+v\nwant %+v", got, want)
	}
}
