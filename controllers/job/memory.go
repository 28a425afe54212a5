package job

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/ringfire/ringfire/controllers/kit"
)

// memory is everything the controller remembers of a Job between its
// reconciles, by Job key, in one place: the actions its policies postponed
// (delays), its status writes held back and made (pacer), its look due
// (wakes), and the stories told once in Events (told: the PodGroup's;
// waiting: the names it waits for). A Job deleted is forgotten (forget), and
// so are the Jobs of a slot this replica loses (lost): a new holder of the
// slot starts without any of it, as this one does when it gains it back.
type memory struct {
	delays  delays
	pacer   kit.Pacer
	wakes   *kit.Wakeups // the Base's: its handler start passes them
	told    told
	waiting told
	// completions are the pods that last completed each task (podseen.go).
	completions completions
	// expired is the UID of each Job deleted after its TTL whose deletion the
	// cache has not shown yet: the TTL requests of a Job come due together,
	// and one run after the delete, on the older cached Job, would issue it
	// again (refused: its resourceVersion precondition is stale).
	expired kit.Keyed[types.UID]
}

// all is every part of the memory, each forgotten by key and by slot.
func (m *memory) all() []kit.Forgetter {
	return []kit.Forgetter{&m.delays, &m.pacer, m.wakes, &m.told, &m.waiting, &m.completions, &m.expired}
}

// forget drops all that is remembered of key.
func (m *memory) forget(key string) { kit.Forget(key, m.all()...) }

// lost drops all that is remembered of the Jobs whose keys fall in slots, of n.
func (m *memory) lost(slots []int, n int) { kit.ForgetSlots(slots, n, m.all()...) }
