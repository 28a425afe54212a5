package job

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/job/build"
	"github.com/ringfire/ringfire/controllers/job/plugins"
	"github.com/ringfire/ringfire/controllers/job/state"
)

// secretCalls lists the requests on Secrets through f's kube client, as "verb name".
func secretCalls(f *fixture) []string {
	var out []string
	for _, a := range f.kube.Actions() {
		if a.GetResource().Resource != "secrets" {
			continue
		}
		name := ""
		if n, ok := a.(interface{ GetName() string }); ok && n.GetName() != "" {
			name = n.GetName()
		} else if c, ok := a.(k8stesting.CreateAction); ok {
			name = c.GetObject().(metav1.Object).GetName()
		}
		out = append(out, a.GetVerb()+" "+name)
	}
	f.kube.ClearActions()
	return out
}

// storedJob is the Job as the fake API server holds it.
func storedJob(t *testing.T, f *fixture, name string) *batch.Job {
	t.Helper()
	job, err := f.vc.BatchV1alpha1().Jobs("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// The ssh plugin's Secret is in no cache: it is created once by name, with no read, not
// created again by a reconcile that still sees the Job unmarked (its status write lost), and
// on a full kill read by name and deleted bound to its UID. The kill forgets the create, so a
// restart makes the Secret again.
func TestSSHSecretByName(t *testing.T) {
	ctx := context.Background()
	job := testJob("p", task("w", 2))
	job.Spec.Plugins = map[string][]string{"ssh": nil}
	f := newFixture(t, nil, job)
	f.admit(t, job)
	sync := request{Request: state.Request{Event: bus.OutOfSyncEvent}}

	if err := f.c.reconcile(ctx, "ns/p", sync); err != nil {
		t.Fatal(err)
	}
	if got := secretCalls(f); !slices.Equal(got, []string{"create p-ssh"}) {
		t.Fatalf("requests on Secrets %q, want one create", got)
	}
	if !plugins.Marked(storedJob(t, f, "p"), "ssh") {
		t.Fatal("the Job is not marked for the ssh plugin")
	}

	// The status write as if lost: the next reconcile sees the Job unmarked.
	f.c.written.Forget("ns/p")
	if err := f.c.reconcile(ctx, "ns/p", sync); err != nil {
		t.Fatal(err)
	}
	if got := secretCalls(f); len(got) != 0 {
		t.Fatalf("requests on Secrets %q on the second look, want none: the Job made it", got)
	}

	f.cacheJob(t, storedJob(t, f, "p"))
	abort := request{Request: state.Request{Event: bus.CommandIssuedEvent, Action: bus.AbortJobAction}}
	if err := f.c.reconcile(ctx, "ns/p", abort); err != nil {
		t.Fatal(err)
	}
	if got := secretCalls(f); !slices.Equal(got, []string{"get p-ssh", "delete p-ssh"}) {
		t.Fatalf("requests on Secrets on the kill %q, want a get and a delete", got)
	}
	if _, pending := f.cache.Expectations().Creating(f.c.slotOf("ns/p"), "ns/p", cache.Secrets, "ns", "p-ssh"); pending {
		t.Fatal("the create of the deleted Secret is still remembered: a restart would not make it")
	}
}

// A Secret of the name that another UID controls (an earlier Job's, kept by a finalizer) is
// never reused nor deleted: the Job waits, told once, without the ssh mark, starts no pod, and
// makes its own Secret once the name is free.
func TestSSHSecretOfAnEarlierJob(t *testing.T) {
	ctx := context.Background()
	job := testJob("p", task("w", 2))
	job.Spec.Plugins = map[string][]string{"ssh": nil}
	job.Status.State.Phase = batch.Pending
	f := newFixture(t, nil, job)
	f.admit(t, job)
	old := &corev1.Secret{ObjectMeta: build.OwnedMeta(earlierOf(job), "p-ssh", f.c.slotOf("ns/p"))}
	old.UID = "uid-old-secret"
	if _, err := f.kube.CoreV1().Secrets("ns").Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.kube.ClearActions()
	sync := request{Request: state.Request{Event: bus.OutOfSyncEvent}}

	if err := f.c.reconcile(ctx, "ns/p", sync); err != nil {
		t.Fatal(err)
	}
	if got := secretCalls(f); !slices.Equal(got, []string{"create p-ssh", "get p-ssh"}) {
		t.Fatalf("requests on Secrets %q, want a refused create and a get", got)
	}
	const wait = "Normal WaitingForDeletion waiting for Secret p-ssh of an earlier Job p (uid uid-earlier-p)"
	if events := f.recorded(); !hasEvent(events, wait) {
		t.Fatalf("events %q, want %q", events, wait)
	}
	if plugins.Marked(storedJob(t, f, "p"), "ssh") {
		t.Fatal("the Job is marked for the ssh plugin while its Secret is another's")
	}
	if pods := creates(f.kube, "pods"); len(pods) != 0 {
		t.Fatalf("pods %v created while the Secret is another's", pods)
	}

	// A full kill of the Job, marked as if by Volcano, leaves the other's Secret alone.
	marked := storedJob(t, f, "p")
	marked.Status.ControlledResources = map[string]string{plugins.ControlledKey("ssh"): "ssh"}
	marked.Status.State.Phase = batch.Running
	f.cacheJob(t, marked)
	f.c.written.Forget("ns/p")
	abort := request{Request: state.Request{Event: bus.CommandIssuedEvent, Action: bus.AbortJobAction}}
	if err := f.c.reconcile(ctx, "ns/p", abort); err != nil {
		t.Fatal(err)
	}
	if got := secretCalls(f); !slices.Equal(got, []string{"get p-ssh"}) {
		t.Fatalf("requests on Secrets on the kill %q, want a get alone", got)
	}

	// The name freed, an unmarked Job makes its own.
	if err := f.kube.CoreV1().Secrets("ns").Delete(ctx, "p-ssh", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.cacheJob(t, job)
	f.c.written.Forget("ns/p")
	f.kube.ClearActions()
	if err := f.c.reconcile(ctx, "ns/p", sync); err != nil {
		t.Fatal(err)
	}
	if got := secretCalls(f); !slices.Equal(got, []string{"create p-ssh"}) {
		t.Fatalf("requests on Secrets %q once the name is free, want one create", got)
	}
	got, err := f.kube.CoreV1().Secrets("ns").Get(ctx, "p-ssh", metav1.GetOptions{})
	if err != nil || !cache.ControlledBy(got, job.UID) {
		t.Fatalf("the Secret is not the Job's: %v", err)
	}
	if !plugins.Marked(storedJob(t, f, "p"), "ssh") {
		t.Fatal("the Job is not marked for the ssh plugin once its Secret is made")
	}
}
