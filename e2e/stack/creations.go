package stack

import (
	"sort"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// PodCreations counts, from a watch on the API server, the distinct pods
// (UIDs) created under each pod name of a namespace: a name with two UIDs
// was created twice.
type PodCreations struct {
	mu   sync.Mutex
	uids map[string]map[types.UID]bool
}

// WatchPodCreations starts counting the pods of ns until the test ends.
func WatchPodCreations(t testing.TB, kube kubernetes.Interface, ns string) *PodCreations {
	pc := &PodCreations{uids: map[string]map[types.UID]bool{}}
	WatchPods(t, kube, ns, func(ev watch.EventType, pod *corev1.Pod) {
		if ev != watch.Added {
			return
		}
		pc.mu.Lock()
		defer pc.mu.Unlock()
		if pc.uids[pod.Name] == nil {
			pc.uids[pod.Name] = map[types.UID]bool{}
		}
		pc.uids[pod.Name][pod.UID] = true
	})
	return pc
}

// Twice returns the pod names created more than once, sorted, and the
// number of pods created.
func (pc *PodCreations) Twice() (names []string, total int) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for name, uids := range pc.uids {
		total += len(uids)
		if len(uids) > 1 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, total
}
