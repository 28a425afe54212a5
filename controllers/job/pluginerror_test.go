package job

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/build"
	"github.com/ringfire/ringfire/controllers/job/plugins"
	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/shard"
)

// refuse makes the kube fake refuse every verb on resource.
func refuse(f *fixture, verb, resource string) {
	f.kube.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "x", errors.New("refused by the test"))
	})
}

// runningWithPods is a Running Job "p" of task w (2 pods, both Running in the
// cache), its PodGroup admitted, with the given plugins; marked names the
// plugins whose OnJobAdd has run (status.controlledResources).
func runningWithPods(t *testing.T, pl map[string][]string, marked ...string) (*fixture, *batch.Job) {
	t.Helper()
	job := testJob("p", task("w", 2))
	job.Spec.Plugins = pl
	job.Status.State.Phase = batch.Running
	job.Status.Running, job.Status.MinAvailable = 2, 2
	for _, name := range marked {
		if job.Status.ControlledResources == nil {
			job.Status.ControlledResources = map[string]string{}
		}
		job.Status.ControlledResources[plugins.ControlledKey(name)] = name
	}
	f := newFixture(t, nil, job)
	f.admit(t, job)
	f.cacheOwned(t, cache.Pods, podOf(job, "w", 0, corev1.PodRunning), podOf(job, "w", 1, corev1.PodRunning))
	return f, job
}

// A plugin error is never dropped: whether the plugins cannot be built (an
// unknown name, a bad argument) or their objects cannot be written, on a sync
// or on a full kill, the reconcile records a Warning Event with Volcano's
// reason PluginError on the Job and returns the error, so that the dispatcher
// retries; the status is not written as if the step had been done (only a kill's new phase,
// written before its deletes, is).
func TestPluginErrorsAreReportedAndReturned(t *testing.T) {
	abort := request{Request: state.Request{Event: bus.CommandIssuedEvent, Action: bus.AbortJobAction}}
	syncReq := request{Request: state.Request{Event: bus.OutOfSyncEvent}}
	for _, tc := range []struct {
		name         string
		setup        func(t *testing.T) *fixture
		req          request
		event        string // the prefix of the Warning Event
		statusWrites int    // before the failed step
	}{
		{name: "unknown plugin on sync", req: syncReq,
			setup: func(t *testing.T) *fixture {
				job := testJob("p", task("w", 2))
				job.Spec.Plugins = map[string][]string{"nosuch": nil}
				return newFixture(t, nil, job)
			},
			event: `Warning PluginError job plugins: unknown plugin "nosuch"`},
		{name: "plugin argument no pod can use, on sync", req: syncReq,
			setup: func(t *testing.T) *fixture {
				job := testJob("p", task("w", 2))
				job.Spec.Plugins = map[string][]string{"mpi": {"--port=0"}}
				return newFixture(t, nil, job)
			},
			event: "Warning PluginError job plugins: plugin mpi: --port=0 is not a port number"},
		{name: "plugin object refused on sync", req: syncReq,
			setup: func(t *testing.T) *fixture {
				job := testJob("p", task("w", 2))
				job.Spec.Plugins = map[string][]string{"svc": nil}
				f := newFixture(t, nil, job)
				refuse(f, "create", "services")
				return f
			},
			event: "Warning PluginError job plugins on sync: create *v1.Service p:"},
		{name: "unknown plugin on a full kill", req: abort,
			setup: func(t *testing.T) *fixture {
				f, _ := runningWithPods(t, map[string][]string{"nosuch": nil})
				return f
			},
			event: `Warning PluginError job plugins: unknown plugin "nosuch"`},
		{name: "plugin object delete refused on a full kill", req: abort,
			setup: func(t *testing.T) *fixture {
				f, job := runningWithPods(t, map[string][]string{"ssh": nil}, "ssh")
				secret := &corev1.Secret{ObjectMeta: build.OwnedMeta(job, "p-ssh", f.c.slotOf("ns/p"))}
				secret.UID = "secret-uid"
				if _, err := f.kube.CoreV1().Secrets("ns").Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				refuse(f, "delete", "secrets")
				return f
			},
			event: "Warning PluginError job plugins on kill: delete *v1.Secret p-ssh:",
			// Aborting is written before the kill's deletes, so that no cut of the kill loses the
			// abort; the failed plugin delete is retried from there.
			statusWrites: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.setup(t)
			err := f.c.reconcile(context.Background(), "ns/p", tc.req)
			if err == nil {
				t.Fatal("the reconcile returned no error: the dispatcher would not retry")
			}
			events := f.recorded()
			if !hasEvent(events, tc.event) {
				t.Fatalf("events %q; want one starting %q (error: %v)", events, tc.event, err)
			}
			if n := statusUpdates(f.vc); n != tc.statusWrites {
				t.Fatalf("%d status writes after a failed step, want %d", n, tc.statusWrites)
			}
			if pods := creates(f.kube, "pods"); len(pods) != 0 {
				t.Fatalf("pods %v created despite the plugin error", pods)
			}
		})
	}
}

// Arguments a plugin skips, as Volcano skips them, do not stop the Job: the
// sync goes on with the flags before them, and a Warning Event
// PluginArgumentsIgnored tells them on the sync that marks the plugin, not
// on later ones.
func TestIgnoredPluginArgumentsAreToldOnce(t *testing.T) {
	job := testJob("p", task("w", 2))
	job.Spec.Plugins = map[string][]string{"svc": {"--disable-network-policy", "--no-such-flag"}}
	f := newFixture(t, nil, job)
	syncReq := request{Request: state.Request{Event: bus.OutOfSyncEvent}}
	if err := f.c.reconcile(context.Background(), "ns/p", syncReq); err != nil {
		t.Fatal(err)
	}
	const told = "Warning PluginArgumentsIgnored plugin svc: flag provided but not defined: -no-such-flag: " +
		"it and the arguments after it are ignored"
	if events := f.recorded(); !hasEvent(events, told) {
		t.Fatalf("events %q; want one starting %q", events, told)
	}
	if got := creates(f.kube, "services"); len(got) != 1 {
		t.Errorf("services created: %v, want the Job's", got)
	}
	if got := creates(f.kube, "networkpolicies"); len(got) != 0 {
		t.Errorf("network policies created: %v; --disable-network-policy came before the bad flag", got)
	}

	if err := f.c.reconcile(context.Background(), "ns/p", syncReq); err != nil {
		t.Fatal(err)
	}
	for _, e := range f.recorded() {
		if strings.Contains(e, "PluginArgumentsIgnored") {
			t.Errorf("told again on the next sync: %q", e)
		}
	}
}

// A replica that lost the Job's slot records no PluginError for a write its
// fence refused; the error is still returned.
func TestPluginWriteFencedIsNotReportedAsPluginError(t *testing.T) {
	job := testJob("p", task("w", 2))
	job.Spec.Plugins = map[string][]string{"svc": nil}
	fenced := errors.New("fence deadline passed")
	f := newFixture(t, func(cfg *Config) { cfg.Valid = func() error { return fenced } }, job)
	err := f.c.reconcile(context.Background(), "ns/p", request{Request: state.Request{Event: bus.OutOfSyncEvent}})
	if !errors.Is(err, shard.ErrNotOwner) {
		t.Fatalf("error %v, want ErrNotOwner", err)
	}
	for _, e := range f.recorded() {
		if strings.Contains(e, "PluginError") {
			t.Fatalf("event %q recorded by a fenced replica", e)
		}
	}
	if n := len(f.kube.Actions()); n != 0 {
		t.Fatalf("%d API calls by a fenced replica, want none", n)
	}
}

// Through the dispatcher: a Job whose plugin is unknown is retried until
// MaxRequeue, each failed try reported, then given up on with
// RetryLimitReached and a TerminateJob, whose full kill fails on the same
// plugin and is reported too, never silenced.
func TestPluginErrorIsRetriedByTheDispatcher(t *testing.T) {
	job := testJob("p", task("w", 1))
	job.Spec.Plugins = map[string][]string{"nosuch": nil}
	var reconciles atomic.Int32
	f := newFixture(t, func(cfg *Config) {
		cfg.MaxRequeue = 2
		cfg.Observe = func(string, time.Time, time.Time) { reconciles.Add(1) }
	}, job)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.c.Disp.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	f.c.Disp.Enqueue("ns/p", request{Request: state.Request{Event: bus.OutOfSyncEvent}})

	const pluginError = `Warning PluginError job plugins: unknown plugin "nosuch"`
	var events []string
	deadline := time.After(20 * time.Second)
	// waitFor collects events until one from index from on starts with
	// prefix, and returns its index.
	waitFor := func(from int, prefix string) int {
		for i := from; ; i++ {
			for i >= len(events) {
				select {
				case e := <-f.events.Events:
					events = append(events, e)
				case <-deadline:
					t.Fatalf("no event %q after 20s; %d reconciles, events %q", prefix, reconciles.Load(), events)
				}
			}
			if strings.HasPrefix(events[i], prefix) {
				return i
			}
		}
	}
	gaveUp := waitFor(0, "Warning RetryLimitReached")
	tries := 0
	for _, e := range events[:gaveUp] {
		if strings.HasPrefix(e, pluginError) {
			tries++
		}
	}
	if tries != 3 {
		t.Fatalf("%d PluginError events before giving up, want one per failed try: a try and MaxRequeue (2) retries; %q", tries, events)
	}
	terminate := waitFor(gaveUp, "Normal ExecuteAction Start to execute action TerminateJob")
	waitFor(terminate, pluginError)
}
