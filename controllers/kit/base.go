package kit

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/ringfire/ringfire/shard"
)

// DefaultMaxRequeue is how often a failing request is retried before it is
// given up, as Volcano's max-requeue-num: the MaxRequeue of every
// controller's DefaultConfig.
const DefaultMaxRequeue = 15

// RetryForever is the MaxRequeue that never gives a request up, the
// dispatcher's MaxRetries of -1.
const RetryForever = -1

// Base is what every sharded controller has beside its own logic: a logger,
// a dispatcher of per-key requests over the slots this replica holds, and an
// Event recorder. A controller embeds it, calls Init from its New, and Run
// from its Run.
type Base[R any] struct {
	Log      hclog.Logger
	Disp     *shard.Dispatcher[R]
	Recorder record.EventRecorder
	// MaxRequeue is the retries a request failing for good gets before it is given up (the
	// Settings' value with its default applied).
	MaxRequeue int
	events     record.EventBroadcaster
	scheme     *runtime.Scheme
	kube       kubernetes.Interface
	waits      *waits
	clock      clock.PassiveClock
	ownership  shard.Ownership
	// Wakes are the keys' delayed looks (WakeAfter); a handler's start passes its key's.
	Wakes Wakeups
}

// now is the time by the Base's clock (the real one before Init).
func (b *Base[R]) now() time.Time {
	if b.clock == nil {
		return time.Now()
	}
	return b.clock.Now()
}

// WakeAfter looks at key again with req after d, unless a look is already due by then.
func (b *Base[R]) WakeAfter(key string, req R, d time.Duration) {
	if d <= 0 {
		b.Disp.Enqueue(key, req)
		return
	}
	slots := b.ownership.Slots()
	if slots == 0 {
		return
	}
	term, held := b.ownership.SlotContext(shard.SlotOf(key, slots))
	if !held {
		return // the slot's next holder looks at the key
	}
	now := b.now()
	if b.Wakes.Due(key, term, now, now.Add(d)) {
		b.Disp.EnqueueAfter(key, req, d)
	}
}

// Settings configure a Base: the controller's Config and Work (Kube posts the Events;
// Workers has no default here, the controllers' DefaultConfig have it), and the rest.
type Settings[R any] struct {
	Config
	Work
	// Name is the controller's: its logger's name, its dispatcher's (the
	// metrics' controller label), and its Events' source
	// "ringfire-<Name>-controller".
	Name string
	// Scheme knows the kinds the Events are recorded on.
	Scheme *runtime.Scheme
	// Handler, OnGiveUp and Coalesce are the dispatcher's
	// (shard.DispatcherConfig). A Handler's error that Classify calls transient is retried
	// for ever and never reaches OnGiveUp: MaxRequeue bounds only the permanent ones.
	Handler  func(ctx context.Context, key string, req R) error
	OnGiveUp func(key string, req R, err error)
	Coalesce func(queued, incoming R) bool
	// OnWait, if set, is called when a key starts waiting on a transient error, or waits for
	// a new reason (see Classify's reasons): once per wait story, not per retry, so that it
	// may record an Event (WaitMessage words it). The wait is logged either way.
	OnWait func(key, reason string, err error)
	// ObjectOf finds the object of a key, for the Warning Event "Quarantined" that tells its
	// user when Work.Quarantine keeps the key from running (nil: logged only).
	ObjectOf func(key string) runtime.Object
	// UIDOf, if set, is the dispatcher's (shard.DispatcherConfig.UIDOf): the UID of the
	// object of key, and false only when the replica knows there is none (its informer has
	// listed). With it a quarantine holds the object it was written for only, and the marks
	// of objects gone are swept.
	UIDOf func(key string) (string, bool)
	// StatusOnQuarantine, if set, writes into the status of the key's object that it is
	// quarantined and why (the Job controller's state.reason and message), so that
	// `kubectl get` and whoever waits on the object (a CronJob, a JobFlow) see it, not only
	// the Event. It runs once per quarantine of the key on this replica, on a goroutine of
	// its own (at most maxStatusOnQuarantine at once; past that the Event alone tells), with
	// the slot's context bounded by StatusOnQuarantineTimeout. It writes nothing the
	// cache shows already.
	StatusOnQuarantine func(ctx context.Context, key, reason string) error
}

// StatusOnQuarantineTimeout bounds one Settings.StatusOnQuarantine write.
const StatusOnQuarantineTimeout = 10 * time.Second

// maxStatusOnQuarantine bounds the Settings.StatusOnQuarantine writes in flight at once, so
// that a storm of quarantines starts no more goroutines than this.
const maxStatusOnQuarantine = 4

// Init checks s and builds the Base.
func (b *Base[R]) Init(s Settings[R]) error {
	if err := errors.Join(s.Config.Validate(), s.Work.Validate()); err != nil {
		return fmt.Errorf("%s controller: %w", s.Name, err)
	}
	b.Log, b.kube, b.MaxRequeue, b.clock, b.ownership = s.LoggerOr().Named(s.Name), s.Kube, s.MaxRequeue, s.ClockOr(), s.Ownership
	b.scheme = s.Scheme
	b.waits = newWaits(s.Name)
	if err := b.waits.register(s.Registerer); err != nil {
		return fmt.Errorf("%s controller: %w", s.Name, err)
	}
	b.events = record.NewBroadcaster()
	b.Recorder = b.events.NewRecorder(s.Scheme, corev1.EventSource{Component: "ringfire-" + s.Name + "-controller"})
	dcfg := shard.DefaultDispatcherConfig[R]()
	dcfg.Name, dcfg.Workers, dcfg.Ownership = s.Name, s.Workers, s.Ownership
	dcfg.MaxRetries, dcfg.Logger, dcfg.Registerer = s.MaxRequeue, b.Log, s.Registerer
	dcfg.Handler, dcfg.OnGiveUp, dcfg.Coalesce = b.watchWaits(s.Handler, s.OnWait), s.OnGiveUp, s.Coalesce
	dcfg.Transient, dcfg.Unfair = IsTransient, s.Unfair
	if s.Quarantine != nil {
		dcfg.Quarantine = s.Quarantine
		statuses := make(chan struct{}, maxStatusOnQuarantine)
		dcfg.OnQuarantine = func(key, reason string) {
			b.tellQuarantine(s.ObjectOf, key, reason)
			if s.StatusOnQuarantine != nil {
				b.statusOnQuarantine(statuses, s.StatusOnQuarantine, key, reason)
			}
		}
		dcfg.UIDOf = s.UIDOf
	}
	disp, err := shard.NewDispatcher(dcfg)
	if err != nil {
		return fmt.Errorf("%s controller: %w", s.Name, err)
	}
	b.Disp = disp
	return nil
}

// watchWaits wraps a handler to count its transient errors and tell each wait story once.
func (b *Base[R]) watchWaits(handler func(context.Context, string, R) error, onWait func(key, reason string, err error)) func(context.Context, string, R) error {
	return func(ctx context.Context, key string, req R) error {
		b.Wakes.Passed(key, b.now())
		err := handler(ctx, key, req)
		if ctx.Err() != nil { // the slot is gone: the dispatcher drops the request
			b.waits.forget(key)
			return err
		}
		reason, news, ended := b.waits.observe(key, err)
		switch {
		case news:
			b.Log.Info("waiting on a transient error; retrying until it passes", "key", key, "reason", reason, "error", err)
			if onWait != nil {
				onWait(key, reason, err)
			}
		case ended:
			b.Log.Info("no longer waiting", "key", key, "error", err)
		}
		return err
	}
}

// ReasonQuarantined is the reason of the Event on an object whose key is
// quarantined.
const ReasonQuarantined = "Quarantined"

// StoreObject is an ObjectOf for Settings: the object of key in the store
// that store returns, or nil. store is called at each use, so it may read an
// informer the controller sets up after Init.
func StoreObject(store func() toolscache.Store) func(key string) runtime.Object {
	return func(key string) runtime.Object {
		obj, ok, err := store().GetByKey(key)
		if err != nil || !ok {
			return nil
		}
		o, _ := obj.(runtime.Object)
		return o
	}
}

// StoreUID is a UIDOf for Settings: the UID of the object of key in the store that store
// returns; before synced reports the store listed, every key is taken to exist, UID unknown.
func StoreUID(store func() toolscache.Store, synced func() bool) func(key string) (string, bool) {
	return func(key string) (string, bool) {
		if !synced() {
			return "", true
		}
		obj, ok, err := store().GetByKey(key)
		if err != nil {
			return "", true
		}
		if !ok {
			return "", false
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return "", true
		}
		return string(m.GetUID()), true
	}
}

// Changed reports whether an update of an object is a new object or a new
// spec: what ends a quarantine (Dispatcher.Release).
func Changed(old, cur metav1.Object) bool {
	return old.GetUID() != cur.GetUID() || old.GetGeneration() != cur.GetGeneration() ||
		releaseValue(old) != releaseValue(cur)
}

// releaseValue is obj's ReleaseAnnotation, "" when longer than the caches keep an annotation
// (256 bytes): a value one cut drops and another keeps must not read as a change.
func releaseValue(obj metav1.Object) string {
	if v := obj.GetAnnotations()[ReleaseAnnotation]; len(v) <= 256 {
		return v
	}
	return ""
}

// ReleaseAnnotation ends an object's quarantine when its value changes (shard.ReleaseAnnotation).
const ReleaseAnnotation = shard.ReleaseAnnotation

// tellQuarantine records on the key's object why ringfire stopped
// reconciling it, and what brings it back.
func (b *Base[R]) tellQuarantine(objectOf func(string) runtime.Object, key, reason string) {
	b.Log.Error("key quarantined: not reconciled again until its object changes", "key", key, "reason", reason)
	if objectOf == nil {
		return
	}
	if obj := objectOf(key); obj != nil {
		b.Recorder.Event(obj, corev1.EventTypeWarning, ReasonQuarantined, QuarantineMessage(b.resourceOf(obj)+"/"+nameOf(obj), reason))
	}
}

// resourceOf is the resource of obj as kubectl takes it unambiguously: "jobs.batch.volcano.sh"
// for a Volcano Job ("job" alone is batch/v1's), "pods" for a pod.
func (b *Base[R]) resourceOf(obj runtime.Object) string {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" && b.scheme != nil {
		if kinds, _, err := b.scheme.ObjectKinds(obj); err == nil && len(kinds) > 0 {
			gvk = kinds[0]
		}
	}
	kind := gvk.Kind
	if kind == "" {
		kind = kindOf(obj)
	}
	resource := strings.ToLower(kind) + "s"
	if gvk.Group != "" {
		resource += "." + gvk.Group
	}
	return resource
}

// statusOnQuarantine runs write for a quarantined key of a held slot on a goroutine of its
// own, unless slots (a semaphore) are all taken: the Event has told it then.
func (b *Base[R]) statusOnQuarantine(slots chan struct{}, write func(context.Context, string, string) error, key, reason string) {
	n := b.ownership.Slots()
	if n == 0 {
		return
	}
	term, held := b.ownership.SlotContext(shard.SlotOf(key, n))
	if !held {
		return
	}
	select {
	case slots <- struct{}{}:
	default:
		b.Log.Warn("quarantine not written into the object's status: too many such writes in flight; its Event tells it", "key", key)
		return
	}
	go func() {
		defer func() {
			<-slots
			if p := recover(); p != nil {
				b.Log.Error("writing a quarantine into a status panicked", "key", key, "panic", p)
			}
		}()
		ctx, cancel := context.WithTimeout(term, StatusOnQuarantineTimeout)
		defer cancel()
		if err := write(ctx, key, reason); err != nil {
			b.Log.Warn("quarantine not written into the object's status; its Event tells it", "key", key, "error", err)
		}
	}()
}

// QuarantineMessage is what a quarantined object's Event and status say (cut to
// maxQuarantineMessage bytes): why ringfire stopped reconciling it and how to bring it back.
// ref is the object as kubectl names it, "jobs.batch.volcano.sh/name".
func QuarantineMessage(ref, reason string) string {
	msg := fmt.Sprintf("ringfire stopped reconciling this object: %s. Nothing else is held up. It is reconciled again when its spec changes, or, keeping it as it is, when its annotation %s changes (kubectl annotate --overwrite %s %s=<anything new>); a replica's log has the details",
		reason, ReleaseAnnotation, ref, ReleaseAnnotation)
	if len(msg) > maxQuarantineMessage {
		msg = strings.ToValidUTF8(msg[:maxQuarantineMessage], "") + "…"
	}
	return msg
}

// maxQuarantineMessage bounds QuarantineMessage: a reason may carry a panic's value.
const maxQuarantineMessage = 1024

// kindOf is obj's kind, as its type names it when its TypeMeta is empty (an informer's objects).
func kindOf(obj runtime.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := reflect.TypeOf(obj)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// nameOf is obj's name, "" if it has none.
func nameOf(obj runtime.Object) string {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetName()
	}
	return ""
}

// Drainer is the controller's in-flight work, for the shard.Manager.
func (b *Base[R]) Drainer() shard.Drainer { return b.Disp }

// Informers is a factory of informers a controller owns (rather than shares
// with the replica's cache): Run starts it and shuts it down.
type Informers interface {
	Start(stop <-chan struct{})
	Shutdown()
}

// Run posts the recorded Events, starts own (nil when every informer is
// shared), waits until every informer in synced has listed, and then runs
// the dispatcher until ctx is done. If ctx ends before the informers have
// listed, it logs notListed (say which CRD may be missing) and returns.
func (b *Base[R]) Run(ctx context.Context, own Informers, notListed string, synced ...toolscache.InformerSynced) {
	b.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: b.kube.CoreV1().Events("")})
	defer b.events.Shutdown()
	if own != nil {
		own.Start(ctx.Done())
		defer own.Shutdown()
	}
	if len(synced) > 0 && !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		b.Log.Warn(notListed)
		return
	}
	b.Disp.Run(ctx)
}
