package queue

import (
	"fmt"
	"math/rand/v2"
	"testing"

	toolscache "k8s.io/client-go/tools/cache"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// TestTallyFollowsEvents drives the tally with random adds, phase
// changes, queue moves and deletes (some as tombstones), and checks after each that the tally
// holds what counting the live PodGroups gives, and nothing for a queue left without any.
func TestTallyFollowsEvents(t *testing.T) {
	phases := []scheduling.PodGroupPhase{"", scheduling.PodGroupPending, scheduling.PodGroupInqueue,
		scheduling.PodGroupRunning, scheduling.PodGroupUnknown, scheduling.PodGroupCompleted, "Odd"}
	queues := []string{"default", "a", "b"}
	rng := rand.New(rand.NewPCG(1, 2))
	live := map[string]*scheduling.PodGroup{}
	var counts tally
	for step := range 5000 {
		name := fmt.Sprintf("pg-%d", rng.IntN(40))
		old := live[name]
		switch {
		case old == nil:
			pg := newPodGroup(name, queues[rng.IntN(len(queues))], phases[rng.IntN(len(phases))])
			live[name] = pg
			counts.event(nil, pg)
		case rng.IntN(4) == 0:
			delete(live, name)
			var obj any = old
			if rng.IntN(2) == 0 {
				obj = toolscache.DeletedFinalStateUnknown{Key: "ns/" + name, Obj: old}
			}
			gone, _ := podGroupOf(obj)
			counts.event(gone, nil)
		default:
			pg := old.DeepCopy()
			if rng.IntN(3) == 0 {
				pg.Spec.Queue = queues[rng.IntN(len(queues))]
			} else {
				pg.Status.Phase = phases[rng.IntN(len(phases))]
			}
			live[name] = pg
			counts.event(old, pg)
		}
		want := map[string]Counts{}
		for _, pg := range live {
			w := want[pg.Spec.Queue]
			w.Add(pg.Status.Phase)
			want[pg.Spec.Queue] = w
		}
		for _, q := range queues {
			if got := counts.get(q); got != want[q] {
				t.Fatalf("step %d: queue %s counts %+v, want %+v", step, q, got, want[q])
			}
		}
		if len(counts.byQueue) != len(want) {
			t.Fatalf("step %d: tally holds %d queues, want %d (a queue without PodGroups kept)", step, len(counts.byQueue), len(want))
		}
	}
}

// TestTallyIgnoresUncountedDelete: a delete of a PodGroup never counted in (a tombstone for an
// object the handler never saw) leaves the counts alone rather than going negative.
func TestTallyIgnoresUncountedDelete(t *testing.T) {
	var counts tally
	counts.add(newPodGroup("x", "q", scheduling.PodGroupRunning), -1)
	if got := counts.get("q"); got != (Counts{}) {
		t.Fatalf("counts %+v after an uncounted delete, want none", got)
	}
}
