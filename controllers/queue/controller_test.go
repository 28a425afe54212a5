package queue

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/shard"
)

// TestMain turns off client-go's streaming lists: Volcano's generated fake clientset does not
// send the bookmark that ends the initial events, so an informer over it would never sync.
func TestMain(m *testing.M) {
	os.Setenv("KUBE_FEATURE_WatchListClient", "false")
	os.Exit(m.Run())
}

func newQueue(name string, state scheduling.QueueState) *scheduling.Queue {
	return &scheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: scheduling.QueueSpec{Weight: 1},
		Status: scheduling.QueueStatus{State: state}}
}

func newPodGroup(name, queue string, phase scheduling.PodGroupPhase) *scheduling.PodGroup {
	return &scheduling.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: scheduling.PodGroupSpec{Queue: queue, MinMember: 1}, Status: scheduling.PodGroupStatus{Phase: phase}}
}

func newCommand(name, queue string, action bus.Action) *bus.Command {
	return &bus.Command{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Action:       string(action),
		TargetObject: &metav1.OwnerReference{APIVersion: "scheduling.volcano.sh/v1beta1", Kind: "Queue", Name: queue}}
}

// start runs a controller over fake clients holding objs until the test ends.
func start(t *testing.T, objs ...any) (*vcfake.Clientset, *kubefake.Clientset) {
	t.Helper()
	return startWith(t, nil, objs...)
}

// startWith is start with setup run on the Volcano client before the controller starts (the
// fake's reactors may not be added once it is in use).
func startWith(t *testing.T, setup func(*vcfake.Clientset), objs ...any) (*vcfake.Clientset, *kubefake.Clientset) {
	t.Helper()
	vc := vcfake.NewSimpleClientset()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *scheduling.Queue:
			_, err = vc.SchedulingV1beta1().Queues().Create(context.Background(), o, metav1.CreateOptions{})
		case *scheduling.PodGroup:
			_, err = vc.SchedulingV1beta1().PodGroups(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
		case *bus.Command:
			_, err = vc.BusV1alpha1().Commands(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if setup != nil {
		setup(vc)
	}
	kube := kubefake.NewSimpleClientset()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := DefaultConfig()
	cfg.Kube, cfg.Volcano, cfg.Ownership, cfg.StatusInterval = kube, vc, shard.HoldAll{Ctx: ctx, S: 64}, 50*time.Millisecond
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return vc, kube
}

// eventually polls cond for up to 5 seconds.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s; last: %s", what, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func queueStatus(vc *vcfake.Clientset, name string) scheduling.QueueStatus {
	q, err := vc.SchedulingV1beta1().Queues().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return scheduling.QueueStatus{}
	}
	return q.Status
}

func commandGone(vc *vcfake.Clientset, name string) bool {
	_, err := vc.BusV1alpha1().Commands("default").Get(context.Background(), name, metav1.GetOptions{})
	return err != nil
}

func eventReasons(kube *kubefake.Clientset) string {
	list, _ := kube.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	var reasons []string
	for _, e := range list.Items {
		reasons = append(reasons, e.Reason+": "+e.Message)
	}
	return strings.Join(reasons, "; ")
}

func TestControllerCloseWithPodGroupsThenEmpty(t *testing.T) {
	vc, kube := start(t,
		newQueue("q1", scheduling.QueueStateOpen),
		newPodGroup("pg1", "q1", scheduling.PodGroupRunning),
		newPodGroup("pg2", "q1", scheduling.PodGroupPending),
		newPodGroup("other", "q2", scheduling.PodGroupRunning),
		newCommand("close-q1", "q1", bus.CloseQueueAction),
	)
	eventually(t, "Closing with counts, Command deleted", func() (bool, string) {
		st := queueStatus(vc, "q1")
		return st.State == scheduling.QueueStateClosing && st.Running == 1 && st.Pending == 1 && commandGone(vc, "close-q1"),
			string(st.State)
	})
	for _, pg := range []string{"pg1", "pg2"} {
		if err := vc.SchedulingV1beta1().PodGroups("ns").Delete(context.Background(), pg, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "Closed once the PodGroups are gone", func() (bool, string) {
		st := queueStatus(vc, "q1")
		return st.State == scheduling.QueueStateClosed && st.Running == 0 && st.Pending == 0, string(st.State)
	})
	eventually(t, "events", func() (bool, string) {
		r := eventReasons(kube)
		return strings.Contains(r, "CommandIssued") && strings.Contains(r, "CloseQueue: Close queue succeed"), r
	})
}

func TestControllerCommandsAndSync(t *testing.T) {
	vc, kube := start(t,
		newQueue("fresh", ""),
		newQueue("empty", scheduling.QueueStateOpen),
		newQueue("shut", scheduling.QueueStateClosed),
		newQueue("root", scheduling.QueueStateOpen),
		newQueue("odd", scheduling.QueueStateOpen),
		newCommand("close-empty", "empty", bus.CloseQueueAction),
		newCommand("open-shut", "shut", bus.OpenQueueAction),
		newCommand("close-root", "root", bus.CloseQueueAction),
		newCommand("bogus", "odd", "Explode"),
	)
	want := map[string]scheduling.QueueState{
		"fresh": scheduling.QueueStateOpen, "empty": scheduling.QueueStateClosed,
		"shut": scheduling.QueueStateOpen, "root": scheduling.QueueStateOpen, "odd": scheduling.QueueStateOpen,
	}
	for name, state := range want {
		eventually(t, name+" → "+string(state), func() (bool, string) {
			st := queueStatus(vc, name)
			return st.State == state, string(st.State)
		})
	}
	for _, cmd := range []string{"close-empty", "open-shut", "close-root", "bogus"} {
		eventually(t, "command "+cmd+" deleted", func() (bool, string) { return commandGone(vc, cmd), "" })
	}
	eventually(t, "refusal and unknown-action events", func() (bool, string) {
		r := eventReasons(kube)
		return strings.Contains(r, "root queue can not be closed") && strings.Contains(r, "UnknownCommandAction") &&
			strings.Contains(r, "OpenQueue: Open queue succeed"), r
	})
}

func TestCommandRequestFilters(t *testing.T) {
	rows := []struct {
		ref  *metav1.OwnerReference
		want bool
	}{
		{&metav1.OwnerReference{APIVersion: "scheduling.volcano.sh/v1beta1", Kind: "Queue", Name: "q"}, true},
		{&metav1.OwnerReference{Kind: "Queue", Name: "q"}, true},
		{&metav1.OwnerReference{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "j"}, false},
		{&metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Queue", Name: "q"}, false},
		{&metav1.OwnerReference{Kind: "Queue"}, false},
		{nil, false},
	}
	for _, r := range rows {
		cmd := &bus.Command{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c"}, Action: "CloseQueue", TargetObject: r.ref}
		if _, _, got := commandRequest(cmd); got != r.want {
			t.Errorf("commandRequest(%+v) = %v, want %v", r.ref, got, r.want)
		}
	}
}

// A Command that names its queue by UID (as vcctl does) acts only on that queue: one made for an
// earlier queue of the name, deleted and made again, is removed with a Warning event and not
// applied. A Command with the queue's UID, or with none, is applied as before.
func TestControllerStaleCommand(t *testing.T) {
	withUID := func(q *scheduling.Queue, uid types.UID) *scheduling.Queue { q.UID = uid; return q }
	forUID := func(cmd *bus.Command, uid types.UID) *bus.Command { cmd.TargetObject.UID = uid; return cmd }
	vc, kube := start(t,
		withUID(newQueue("renewed", scheduling.QueueStateOpen), "uid-now"),
		withUID(newQueue("same", scheduling.QueueStateOpen), "uid-same"),
		withUID(newQueue("unnamed", scheduling.QueueStateOpen), "uid-unnamed"),
		forUID(newCommand("close-renewed", "renewed", bus.CloseQueueAction), "uid-before"),
		forUID(newCommand("close-same", "same", bus.CloseQueueAction), "uid-same"),
		newCommand("close-unnamed", "unnamed", bus.CloseQueueAction),
	)
	for name, state := range map[string]scheduling.QueueState{"same": scheduling.QueueStateClosed, "unnamed": scheduling.QueueStateClosed} {
		eventually(t, name+" → "+string(state), func() (bool, string) {
			st := queueStatus(vc, name)
			return st.State == state, string(st.State)
		})
	}
	eventually(t, "the stale Command removed and told", func() (bool, string) {
		r := eventReasons(kube)
		return commandGone(vc, "close-renewed") && strings.Contains(r,
			"StaleCommand: Command default/close-renewed was made for an earlier queue renewed (uid uid-before), "+
				"not this one (uid uid-now): it was removed and its CloseQueue not applied"), r
	})
	if st := queueStatus(vc, "renewed"); st.State != scheduling.QueueStateOpen {
		t.Errorf("the re-made queue is %s; a Command made for the earlier one must leave it Open", st.State)
	}
	eventually(t, "CommandIssued for the two applied Commands only", func() (bool, string) { // events are sent a moment later
		r := eventReasons(kube)
		return strings.Count(r, "CommandIssued") == 2, r
	})
}

func TestStaleCommand(t *testing.T) {
	for _, r := range []struct {
		target, current types.UID
		want            bool
	}{
		{"", "u1", false}, // no UID: whichever queue has the name (Volcano)
		{"u1", "u1", false},
		{"u0", "u1", true},
	} {
		if got := StaleCommand(r.target, r.current); got != r.want {
			t.Errorf("StaleCommand(%q, %q) = %v, want %v", r.target, r.current, got, r.want)
		}
	}
}

// A Close Command whose first try fails after taking it (its status write
// refused) is run by the retry, though the Command's delete has reached the
// cache by then: the replica remembers it took it until a try succeeds.
func TestCommandRunsWhenItsFirstTryFailsAfterTheTake(t *testing.T) {
	var failed atomic.Bool
	vc, _ := startWith(t, func(vc *vcfake.Clientset) {
		vc.PrependReactor("update", "queues", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() == "status" && failed.CompareAndSwap(false, true) {
				// Slow enough for the Command's delete to reach the cache first.
				time.Sleep(200 * time.Millisecond)
				return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "scheduling.volcano.sh", Resource: "queues"}, "q1", nil)
			}
			return false, nil, nil
		})
	}, newQueue("q1", scheduling.QueueStateOpen), newCommand("close-q1", "q1", bus.CloseQueueAction))
	eventually(t, "q1 Closed after a failed first try", func() (bool, string) {
		st := queueStatus(vc, "q1")
		return st.State == scheduling.QueueStateClosed && failed.Load(), string(st.State)
	})
}
