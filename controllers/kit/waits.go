package kit

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringfire/ringfire/internal/promreg"
	"github.com/ringfire/ringfire/shard"
)

// waits remembers which keys wait on a transient error, and why, so that a wait is told
// once per story (a key starts waiting, or waits for a new reason), not once per retry: a
// Job that waits an hour on a quota is retried 60 times and told once. Every Event is an
// API write the cluster pays for, at the moment it is least able to. A blip is not a story:
// a wait is told once its retry failed too (tellAfter), so a conflict that the next read
// resolves, 5 ms later, tells nothing.
type waits struct {
	// by is each waiting key's wait. A key leaves when its reconcile passes or fails for
	// good. A key whose slot moves while it waits stays until it is reconciled here again:
	// at most one entry per key this replica ever saw wait.
	by Keyed[wait]

	errors  *prometheus.CounterVec // ringfire_transient_errors_total{name, reason}
	waiting prometheus.GaugeFunc   // ringfire_keys_waiting{name}
}

// wait is a key's wait story.
type wait struct {
	failures int    // transient failures in a row
	told     string // the reason last told, "" before the story is told
}

// tellAfter is the transient failures in a row that make a wait worth telling.
const tellAfter = 2

func newWaits(controller string) *waits {
	w := &waits{}
	labels := prometheus.Labels{"name": controller}
	w.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        "ringfire_transient_errors_total",
		Help:        "Reconciles that failed with an error waiting cures (throttling, 5xx, timeouts, quota, ...), by reason: retried for ever, never counted toward the requeue limit.",
		ConstLabels: labels,
	}, []string{"reason"})
	for _, r := range TransientReasons { // each reason shows from the start, at 0
		w.errors.WithLabelValues(r)
	}
	w.waiting = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "ringfire_keys_waiting",
		Help:        "Keys whose last reconcile failed with a transient error and that wait for their retry.",
		ConstLabels: labels,
	}, func() float64 { return float64(w.by.Len()) })
	return w
}

func (w *waits) register(reg prometheus.Registerer) error {
	return promreg.Register(reg, w.errors, w.waiting)
}

// observe takes the outcome of a reconcile of key. It returns the reason the key now waits
// for and whether that is news to tell: the key has waited long enough (tellAfter) and was
// not told to wait for this reason yet. ended says a told wait is over.
func (w *waits) observe(key string, err error) (reason string, news, ended bool) {
	reason, transient := Classify(err)
	if transient {
		w.errors.WithLabelValues(reason).Inc()
	}
	w.by.Update(key, func(cur wait, waited bool) (wait, bool) {
		if !transient {
			ended = waited && cur.told != ""
			return cur, false
		}
		cur.failures++
		if news = cur.failures >= tellAfter && cur.told != reason; news {
			cur.told = reason
		}
		return cur, true
	})
	if !transient {
		return "", false, ended
	}
	return reason, news, false
}

// forget drops key, whose reconcile was cut short by the loss of its slot.
func (w *waits) forget(key string) { w.by.Forget(key) }

// EventWaiting is the reason of the Event that tells why an object waits (WaitMessage).
const EventWaiting = "Waiting"

// WaitMessage tells a user why a reconcile waits and what ringfire does meanwhile, for the
// Event of a wait story (Settings.OnWait).
func WaitMessage(reason string, err error) string {
	return fmt.Sprintf("waiting: %s: %v; ringfire tries again at least every %v, for as long as it takes, "+
		"and the object keeps its phase meanwhile", waitCause(reason), err, shard.DefaultMaxTransientBackoff)
}

func waitCause(reason string) string {
	switch reason {
	case ReasonThrottled:
		return "the API server is throttling requests"
	case ReasonServerError:
		return "the API server failed the request (as it does when an admission webhook cannot be called)"
	case ReasonTimeout:
		return "the API server did not answer in time"
	case ReasonConnection:
		return "the API server cannot be reached"
	case ReasonQuota:
		return "a ResourceQuota of the namespace is full"
	case ReasonConflict:
		return "an object changed since it was read"
	case ReasonNotFound:
		return "an object it needs does not exist (yet)"
	case ReasonUnauthorized:
		return "ringfire's service account is refused (its credentials or RBAC role)"
	case ReasonNotOwner:
		return "this replica's hold on the object's slot is in doubt"
	}
	return reason
}
