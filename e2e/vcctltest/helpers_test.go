package vcctltest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/e2e/sidebyside"
	"github.com/ringfire/ringfire/e2e/stack"
)

// vcctl runs Volcano's vcctl against one control plane.
type vcctl struct {
	bin        string
	kubeconfig string
}

// run runs vcctl with args and returns what it printed; a non-zero exit fails the test.
func (v vcctl) run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := v.try(args...)
	if err != nil {
		t.Fatalf("vcctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// try runs vcctl with args, bounded to a minute, and returns its output and error.
func (v vcctl) try(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, v.bin, args...)
	// vcctl reads $KUBECONFIG; HOME points nowhere, so no other configuration is picked up.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+v.kubeconfig, "HOME="+filepath.Dir(v.kubeconfig))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// row returns the fields of the line of a vcctl table whose field at column col is value,
// or nil.
func row(table string, col int, value string) []string {
	for line := range strings.Lines(table) {
		f := strings.Fields(line)
		if len(f) > col && f[col] == value {
			return f
		}
	}
	return nil
}

// column returns the index of header name in the first line of a vcctl table, or fails.
func column(t *testing.T, table, name string) int {
	t.Helper()
	header, _, _ := strings.Cut(table, "\n")
	i := slices.Index(strings.Fields(header), name)
	if i < 0 {
		t.Fatalf("no column %q in the header %q", name, header)
	}
	return i
}

// cell is the value in column name of the row whose first column is key, or fails.
func cell(t *testing.T, table, key, name string) string {
	t.Helper()
	r := row(table, 0, key)
	if r == nil {
		t.Fatalf("no row %q in\n%s", key, table)
	}
	i := column(t, table, name)
	if i >= len(r) {
		t.Fatalf("row %q has no column %q: %q", key, name, r)
	}
	return r[i]
}

// phases records the phases every Job goes through, as the API server reports them.
type phases struct {
	mu  sync.Mutex
	seq map[string][]batch.JobPhase // by namespace/name; consecutive repeats dropped
}

func watchPhases(t *testing.T, env *sidebyside.Env) *phases {
	t.Helper()
	p := &phases{seq: map[string][]batch.JobPhase{}}
	jobs := env.Volcano.BatchV1alpha1().Jobs(metav1.NamespaceAll)
	list, err := jobs.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watchAll(t, list.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return jobs.Watch(ctx, o) },
		func(ev watch.Event) {
			job, ok := ev.Object.(*batch.Job)
			if !ok {
				return
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			key := job.Namespace + "/" + job.Name
			seq := p.seq[key]
			if ph := job.Status.State.Phase; ph != "" && (len(seq) == 0 || seq[len(seq)-1] != ph) {
				p.seq[key] = append(seq, ph)
			}
		})
	return p
}

// of returns the phases seen of Job ns/name so far.
func (p *phases) of(ns, name string) []batch.JobPhase {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seq[ns+"/"+name])
}

// since returns the phases of ns/name from the n-th on.
func (p *phases) since(ns, name string, n int) []batch.JobPhase {
	all := p.of(ns, name)
	if n > len(all) {
		return nil
	}
	return all[n:]
}

// commands records every Command the API server reports: when one was added and whether it
// has been deleted since (taken by a controller).
type commands struct {
	mu   sync.Mutex
	seen []seenCommand
}

type seenCommand struct {
	namespace, name string
	action          string
	target          string    // kind/name
	targetUID       types.UID // the target's uid, as vcctl sets it
	deleted         bool
}

func watchCommands(t *testing.T, env *sidebyside.Env) *commands {
	t.Helper()
	c := &commands{}
	client := env.Volcano.BusV1alpha1().Commands(metav1.NamespaceAll)
	list, err := client.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watchAll(t, list.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return client.Watch(ctx, o) },
		func(ev watch.Event) {
			cmd, ok := ev.Object.(*bus.Command)
			if !ok {
				return
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			i := slices.IndexFunc(c.seen, func(s seenCommand) bool { return s.namespace == cmd.Namespace && s.name == cmd.Name })
			if i < 0 {
				s := seenCommand{namespace: cmd.Namespace, name: cmd.Name, action: cmd.Action}
				if cmd.TargetObject != nil {
					s.target, s.targetUID = cmd.TargetObject.Kind+"/"+cmd.TargetObject.Name, cmd.TargetObject.UID
				}
				c.seen = append(c.seen, s)
				i = len(c.seen) - 1
			}
			if ev.Type == watch.Deleted {
				c.seen[i].deleted = true
			}
		})
	return c
}

// waitTaken waits until a Command with action on target (kind/name) in ns has been created
// and then deleted, and returns it.
func (c *commands) waitTaken(t *testing.T, ns, action, target string) seenCommand {
	t.Helper()
	var got seenCommand
	stack.WaitFor(t, fmt.Sprintf("a %s Command on %s taken", action, target), 30*time.Second, func() (bool, string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, s := range c.seen {
			if s.namespace == ns && s.action == action && s.target == target {
				got = s
				return s.deleted, fmt.Sprintf("%+v", s)
			}
		}
		return false, fmt.Sprintf("no such Command among %+v", c.seen)
	})
	return got
}

// watchAll runs a retrying watch from the resource version rv (of a list made just before) until
// the test ends, handing every event to see.
func watchAll(t *testing.T, rv string, w func(context.Context, metav1.ListOptions) (watch.Interface, error), see func(watch.Event)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &toolscache.ListWatch{WatchFuncWithContext: w})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range rw.ResultChan() {
			see(ev)
		}
	}()
	t.Cleanup(func() { rw.Stop(); <-done })
}

// waitPhase waits until Job ns/name is in phase and returns it.
func waitPhase(t *testing.T, env *sidebyside.Env, ns, name string, phase batch.JobPhase, limit time.Duration) *batch.Job {
	t.Helper()
	var job *batch.Job
	stack.WaitFor(t, fmt.Sprintf("job %s/%s %s", ns, name, phase), limit, func() (bool, string) {
		j, err := env.Volcano.BatchV1alpha1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		job = j
		return j.Status.State.Phase == phase, fmt.Sprintf("phase %q status %+v", j.Status.State.Phase, j.Status)
	})
	return job
}

// jobPods are the pods of Job ns/name, by the label its controller puts on them.
func jobPods(t *testing.T, env *sidebyside.Env, ns, name string) []corev1.Pod {
	t.Helper()
	list, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: batch.JobNameKey + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitRunningPods waits until Job ns/name has exactly n pods, all Running and none being deleted.
func waitRunningPods(t *testing.T, env *sidebyside.Env, ns, name string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	stack.WaitFor(t, fmt.Sprintf("%d running pods of %s/%s", n, ns, name), 30*time.Second, func() (bool, string) {
		pods = jobPods(t, env, ns, name)
		var saw []string
		running := 0
		for _, p := range pods {
			saw = append(saw, p.Name+":"+string(p.Status.Phase))
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		return running == n && len(pods) == n, strings.Join(saw, " ")
	})
	return pods
}

// waitNoPods waits up to limit until Job ns/name has no pods left.
func waitNoPods(t *testing.T, env *sidebyside.Env, ns, name string, limit time.Duration) {
	t.Helper()
	stack.WaitFor(t, "no pods of "+ns+"/"+name, limit, func() (bool, string) {
		pods := jobPods(t, env, ns, name)
		var saw []string
		for _, p := range pods {
			saw = append(saw, p.Name+":"+string(p.Status.Phase))
		}
		return len(pods) == 0, strings.Join(saw, " ")
	})
}

// jobEvents are the reasons of the Events recorded on Job ns/name.
func jobEvents(t *testing.T, env *sidebyside.Env, ns, name string) []string {
	t.Helper()
	list, err := env.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Job,involvedObject.name=" + name,
	})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range list.Items {
		reasons = append(reasons, e.Reason)
	}
	return reasons
}

// waitQueueState waits until Queue name is in state and returns it.
func waitQueueState(t *testing.T, env *sidebyside.Env, name string, state scheduling.QueueState) *scheduling.Queue {
	t.Helper()
	var q *scheduling.Queue
	stack.WaitFor(t, "queue "+name+" "+string(state), 30*time.Second, func() (bool, string) {
		got, err := env.Volcano.SchedulingV1beta1().Queues().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		q = got
		return got.Status.State == state, fmt.Sprintf("%+v", got.Status)
	})
	return q
}
