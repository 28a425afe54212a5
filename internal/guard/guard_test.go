package guard

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/ringfire/ringfire/shard"
)

// quarantiner records the keys it is asked to quarantine.
type quarantiner struct {
	mu   sync.Mutex
	keys []string
}

func (q *quarantiner) QuarantineKey(key, reason string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.keys = append(q.keys, key)
	return true
}

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func logger(buf *bytes.Buffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: buf, Level: hclog.Error, JSONFormat: true})
}

// A panic in any of the three calls is recovered, counted, logged once with
// the object's key and the stack, and its key quarantined; the calls that do
// not panic go through.
func TestHandlerRecoversCountsLogsAndQuarantines(t *testing.T) {
	var buf bytes.Buffer
	q := &quarantiner{}
	calls := 0
	boom := func(obj any) {
		calls++
		if KeyOf(obj) == "ns/bad" {
			var s []int
			_ = s[:len(s)-1] // the cron parser's panic: slice bounds out of range [:-1]
		}
	}
	h := Handler("test-handler", logger(&buf), toolscache.ResourceEventHandlerFuncs{
		AddFunc: boom, UpdateFunc: func(_, cur any) { boom(cur) }, DeleteFunc: boom,
	}, Quarantine(q))
	before := Panics("test-handler")
	h.OnAdd(pod("ns", "bad"), false)
	h.OnUpdate(pod("ns", "bad"), pod("ns", "bad"))
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/bad", Obj: pod("ns", "bad")})
	h.OnAdd(pod("ns", "good"), false)
	if calls != 4 {
		t.Fatalf("handler called %d times, want 4", calls)
	}
	if got := Panics("test-handler") - before; got != 3 {
		t.Errorf("ringfire_handler_panics_total{component=test-handler} rose by %v, want 3", got)
	}
	if want := []string{"ns/bad", "ns/bad", "ns/bad"}; strings.Join(q.keys, ",") != strings.Join(want, ",") {
		t.Errorf("quarantined %v, want %v", q.keys, want)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d log lines, want 3:\n%s", len(lines), buf.String())
	}
	for _, l := range lines {
		for _, want := range []string{`"object":"ns/bad"`, `"component":"test-handler"`, `slice bounds out of range`, `"stack":"goroutine`} {
			if !strings.Contains(l, want) {
				t.Errorf("log line lacks %s: %s", want, l)
			}
		}
	}
}

// A key function that panics, a Quarantiner that panics, and objects with no
// name do not let the panic out either.
func TestHandlerSurvivesItsOwnHelpers(t *testing.T) {
	panicky := QuarantineBy(quarantinerFunc(func(string, string) bool { panic("quarantine") }), func(any) string { return "k" })
	badKey := QuarantineBy(&quarantiner{}, func(any) string { panic("key") })
	for _, opt := range []Option{panicky, badKey} {
		h := Handler("test-helpers", nil, toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { panic("handler") }}, opt)
		for _, obj := range []any{nil, 42, (*corev1.Pod)(nil), toolscache.DeletedFinalStateUnknown{}, pod("", "cluster-scoped")} {
			h.OnAdd(obj, false)
		}
	}
}

type quarantinerFunc func(key, reason string) bool

func (f quarantinerFunc) QuarantineKey(key, reason string) bool { return f(key, reason) }

func TestKeyOf(t *testing.T) {
	for _, tc := range []struct {
		obj  any
		want string
	}{
		{pod("ns", "a"), "ns/a"},
		{pod("", "q"), "q"},
		{toolscache.DeletedFinalStateUnknown{Key: "ns/b", Obj: pod("ns", "x")}, "ns/b"},
		{toolscache.DeletedFinalStateUnknown{Obj: pod("ns", "c")}, "ns/c"},
		{nil, ""},
		{"text", ""},
		{(*corev1.Pod)(nil), ""},
	} {
		if got := KeyOf(tc.obj); got != tc.want {
			t.Errorf("KeyOf(%#v) = %q, want %q", tc.obj, got, tc.want)
		}
	}
}

// A transform that panics stores a stub of the object: same type, its
// identity and owners, its ringfire labels, nothing else.
func TestTransformStoresAStubOnPanic(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	p := pod("ns", "forged")
	p.UID, p.ResourceVersion = "u1", "7"
	p.Labels = map[string]string{shard.SlotLabel: "12", "ringfire.io/other": "1", "app": big}
	p.Annotations = map[string]string{"a": big}
	p.Spec.Containers = []corev1.Container{{Name: "c", Image: big}}
	for i := range 10 {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{Name: "o" + string(rune('a'+i)), UID: "x"})
	}
	p.OwnerReferences[7].Controller = ptr.To(true)
	tf := Transform("test-transform", nil, func(any) (any, error) { panic("transform") })
	before := Panics("test-transform")
	out, err := tf(p)
	if err != nil {
		t.Fatal(err)
	}
	if Panics("test-transform")-before != 1 {
		t.Error("the panic was not counted")
	}
	s, ok := out.(*corev1.Pod)
	if !ok {
		t.Fatalf("stub is a %T, want *v1.Pod", out)
	}
	if s.Name != "forged" || s.Namespace != "ns" || s.UID != "u1" || s.ResourceVersion != "7" {
		t.Errorf("stub lost its identity: %+v", s.ObjectMeta)
	}
	if len(s.Labels) != 2 || s.Labels[shard.SlotLabel] != "12" || s.Labels["ringfire.io/other"] != "1" {
		t.Errorf("stub labels %v, want the two ringfire.io/ ones", s.Labels)
	}
	if len(s.Annotations) != 0 || len(s.Spec.Containers) != 0 {
		t.Error("stub kept annotations or spec")
	}
	if len(s.OwnerReferences) != stubOwners || s.OwnerReferences[0].Name != "oh" {
		t.Errorf("stub owners %v, want %d with the controller (oh) first", s.OwnerReferences, stubOwners)
	}
	if p.Labels["app"] != big {
		t.Error("Stub changed its input")
	}
}

// What cannot be stubbed is an error, not a panic; a transform that does
// not panic is passed through untouched.
func TestTransformErrorsAndPassThrough(t *testing.T) {
	tf := Transform("test-transform", nil, func(any) (any, error) { panic("transform") })
	for _, obj := range []any{nil, 42, struct{}{}} {
		if _, err := tf(obj); err == nil {
			t.Errorf("a stub of %#v: no error", obj)
		}
	}
	p := pod("ns", "a")
	out, err := Transform("test-transform", nil, func(o any) (any, error) { return o, nil })(p)
	if err != nil || out != any(p) {
		t.Errorf("pass-through gave %v, %v", out, err)
	}
}

// A stub keeps at most stubLabels ringfire labels, the slot's always.
func TestStubBoundsItsLabels(t *testing.T) {
	p := pod("ns", "a")
	p.Labels = map[string]string{shard.SlotLabel: "3"}
	for i := range 50 {
		p.Labels["ringfire.io/l"+string(rune('a'+i))] = "v"
	}
	out, err := Stub(p)
	if err != nil {
		t.Fatal(err)
	}
	s := out.(*corev1.Pod)
	if len(s.Labels) != stubLabels || s.Labels[shard.SlotLabel] != "3" {
		t.Errorf("stub has %d labels (slot %q), want %d with the slot's", len(s.Labels), s.Labels[shard.SlotLabel], stubLabels)
	}
}

func TestSlotLabelIsShards(t *testing.T) {
	if slotLabel != shard.SlotLabel {
		t.Errorf("slotLabel %q, shard.SlotLabel %q", slotLabel, shard.SlotLabel)
	}
}

// After ContainClientGo, client-go's HandleCrash counts and returns instead
// of re-panicking.
func TestContainClientGo(t *testing.T) {
	ContainClientGo(nil)
	ContainClientGo(nil) // once only
	before := Panics(ClientGo)
	func() {
		defer utilruntime.HandleCrash()
		panic("in a client-go goroutine")
	}()
	if got := Panics(ClientGo) - before; got != 1 {
		t.Errorf("ringfire_handler_panics_total{component=client-go} rose by %v, want 1", got)
	}
}
