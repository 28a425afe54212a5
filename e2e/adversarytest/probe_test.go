package adversarytest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
	"github.com/ringfire/ringfire/shard"
)

// After the attacks, a probe Job of probePods pods on every attacked slot
// must have all its pods created within probeLimit of its create: the slot
// serves its Jobs as an unattacked one does.
const (
	probePods  = 2
	probeLimit = 5 * time.Second
	// probeSearch bounds the names tried for one whose key falls on a slot
	// (with 256 slots, one name in 256 does, on average).
	probeSearch = 100_000
)

// probe runs the probe Jobs, all at once, in a namespace of the admin's.
func (w *world) probe(t *testing.T) {
	slotList := w.attackedSlots()
	if len(slotList) == 0 {
		t.Fatal("no attack recorded a slot it aimed at")
	}
	ns := vcjob.Namespace(t, w.kube, "probe")
	names := map[int]string{}
	for _, s := range slotList {
		for i := range probeSearch {
			name := fmt.Sprintf("probe-%d", i)
			if shard.SlotOf(ns+"/"+name, slots) == s {
				names[s] = name
				break
			}
		}
		if names[s] == "" {
			t.Fatalf("no name of %d tried falls on slot %d", probeSearch, s)
		}
	}
	var mu sync.Mutex
	created, done := map[string]time.Time{}, map[string]time.Time{}
	seen := map[string]map[string]bool{}
	stack.WatchPods(t, w.kube, ns, func(ev watch.EventType, pod *corev1.Pod) {
		if ev != watch.Added {
			return
		}
		at := time.Now()
		job := pod.Labels[batch.JobNameKey]
		mu.Lock()
		defer mu.Unlock()
		if seen[job] == nil {
			seen[job] = map[string]bool{}
		}
		seen[job][pod.Name] = true
		if len(seen[job]) == probePods {
			done[job] = at
		}
	})
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Go(func() {
			job := vcjob.New(ns, name, vcjob.Task("worker", probePods, "1s", ""))
			mu.Lock()
			created[name] = time.Now()
			mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := w.volcano.BatchV1alpha1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
				t.Errorf("create probe Job %s: %v", name, err)
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(probeLimit + time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(done)
		mu.Unlock()
		if n == len(names) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.mu.Lock()
	by := map[int]string{}
	for _, s := range slotList {
		by[s] = strings.Join(w.attacked[s], ", ")
	}
	w.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	var slow []string
	var worst time.Duration
	for _, s := range slotList {
		name := names[s]
		end, ok := done[name]
		if !ok {
			slow = append(slow, fmt.Sprintf("slot %d (%s, attacked by %s): %d of %d pods after %v",
				s, name, by[s], len(seen[name]), probePods, probeLimit))
			continue
		}
		d := end.Sub(created[name])
		worst = max(worst, d)
		if d > probeLimit {
			slow = append(slow, fmt.Sprintf("slot %d (%s, attacked by %s): all pods after %v",
				s, name, by[s], d.Round(time.Millisecond)))
		}
	}
	t.Logf("probe: %d Jobs on the attacked slots, the slowest had all its pods %v after its create", len(names), worst.Round(time.Millisecond))
	for _, s := range slow {
		t.Errorf("probe on %s", s)
	}
}
