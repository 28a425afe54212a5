package guard

import (
	"fmt"
	"runtime/debug"

	"github.com/hashicorp/go-hclog"
	toolscache "k8s.io/client-go/tools/cache"
)

// maxStack bounds the stack logged with a panic: a deep recursion's stack
// would otherwise be megabytes in one log line.
const maxStack = 16 << 10

// Quarantiner is where a key whose handler panicked is quarantined: a
// controller's shard.Dispatcher (QuarantineKey marks it as a panic of its
// reconcile would, on a slot this replica holds; false when it did not).
type Quarantiner interface {
	QuarantineKey(key, reason string) bool
}

// An Option adds to what Handler does on a panic.
type Option func(*handler)

// Quarantine quarantines, on a panic, the key of the object the handler was
// given (KeyOf) in q: for the handlers of a controller's own kind, whose
// object's key is the Dispatcher's key.
func Quarantine(q Quarantiner) Option {
	return QuarantineBy(q, KeyOf)
}

// QuarantineBy quarantines, on a panic, keyOf(obj) in q: for the handlers of
// a kind whose objects map to another's key (a pod to its Job's). keyOf runs
// under a recover; "" quarantines nothing.
func QuarantineBy(q Quarantiner, keyOf func(obj any) string) Option {
	return func(h *handler) { h.q, h.keyOf = q, keyOf }
}

// Handler returns h with every call recovered: a panic in OnAdd, OnUpdate or
// OnDelete is counted in ringfire_handler_panics_total{component}, logged
// once at Error with the object's key and the stack, quarantined where an
// Option says where, and then the event is over; the informer goes on with
// the next. Without it client-go re-panics and the process ends.
//
// component names the controller or cache in the metric and the log
// ("cronjob", "job", "cache"); log may be nil.
func Handler(component string, log hclog.Logger, h toolscache.ResourceEventHandler, opts ...Option) toolscache.ResourceEventHandler {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	g := &handler{component: component, log: log, h: h}
	for _, o := range opts {
		o(g)
	}
	return g
}

type handler struct {
	component string
	log       hclog.Logger
	h         toolscache.ResourceEventHandler
	q         Quarantiner
	keyOf     func(obj any) string
}

func (g *handler) OnAdd(obj any, isInInitialList bool) {
	defer g.recover("add", obj)
	g.h.OnAdd(obj, isInInitialList)
}

func (g *handler) OnUpdate(oldObj, newObj any) {
	defer g.recover("update", newObj)
	g.h.OnUpdate(oldObj, newObj)
}

func (g *handler) OnDelete(obj any) {
	defer g.recover("delete", obj)
	g.h.OnDelete(obj)
}

// recover ends a panic of the handler's call for event on obj.
func (g *handler) recover(event string, obj any) {
	p := recover()
	if p == nil {
		return
	}
	panics.WithLabelValues(g.component).Inc()
	key := describe(obj)
	quarantined := ""
	if g.q != nil {
		if qk := g.quarantineKey(obj); qk != "" {
			reason := fmt.Sprintf("its %s event handler panicked on %s: %v", event, key, p)
			if g.quarantine(qk, reason) {
				quarantined = qk
			}
		}
	}
	g.log.Error("an informer event handler panicked; the event is skipped and the replica goes on",
		"component", g.component, "event", event, "object", key, "quarantined", quarantined,
		"panic", fmt.Sprint(p), "stack", stack())
}

// quarantineKey is keyOf(obj), or "" if keyOf panics too.
func (g *handler) quarantineKey(obj any) (key string) {
	defer func() {
		if recover() != nil {
			key = ""
		}
	}()
	return g.keyOf(obj)
}

// quarantine calls the Quarantiner; a panic there is not let out either.
func (g *handler) quarantine(key, reason string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return g.q.QuarantineKey(key, reason)
}

// stack is the panicking goroutine's stack, cut to maxStack bytes.
func stack() string {
	s := debug.Stack()
	if len(s) > maxStack {
		s = append(s[:maxStack:maxStack], "\n... (cut)"...)
	}
	return string(s)
}
