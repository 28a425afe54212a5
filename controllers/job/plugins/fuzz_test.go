package plugins

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ringfire/ringfire/shard"
)

// FuzzPluginArgs: whatever arguments a Job gives a plugin (job.spec.plugins is the user's, and
// Volcano's CRD checks none of it), building the plugin never panics, an error names what is
// wrong, and a plugin built runs every hook on a Job of two tasks without a panic, every object
// it asks for owned by the Job and labelled with its slot. args is the arguments joined by "\n".
func FuzzPluginArgs(f *testing.F) {
	for _, seed := range []struct {
		name, args string
	}{
		{"svc", ""}, {"svc", "--publish-not-ready-addresses=true\n--disable-network-policy"},
		{"ssh", "--no-root\n--ssh-key-file-path=/x"}, {"ssh", "--ssh-private-key=x"},
		{"env", ""}, {"env", "x"}, {"mpi", "--port=2222\n--master=master\n--worker=worker"}, {"mpi", "--port=0"},
		{"mpi", "--port=99999999999999999999"}, {"pytorch", "--master=master\n--worker=worker\n--port=23456"},
		{"pytorch", "--port=-1"}, {"tensorflow", "--ps=master\n--worker=worker\n--port=2222"},
		{"ray", "--head=master\n--headContainer=main\n--workerContainer=main\n--port=6379"},
		{"ray", "--head="}, {"hcclrank", ""}, {"hcclrank", "--master=\n--worker="},
		{"svc", "-h"}, {"svc", "--"}, {"svc", "-"}, {"svc", "---x"}, {"ssh", "--ssh-key-file-path="},
		{"unknown", ""}, {"", ""},
	} {
		f.Add(seed.name, seed.args)
	}
	f.Fuzz(func(t *testing.T, name, joined string) {
		var args []string
		if joined != "" {
			args = strings.Split(joined, "\n")
		}
		p, err := New(name, args, Env{Slot: testSlot, NewSSHKey: fixedKeys})
		if err != nil {
			if !strings.Contains(err.Error(), "plugin") {
				t.Fatalf("New(%q, %q): error %q does not name the plugin", name, args, err)
			}
			return
		}
		if p.Name() != name {
			t.Fatalf("New(%q) built %q", name, p.Name())
		}
		job := testJob(task("master", 1), task("worker", 2))
		job.Spec.Plugins[name] = args
		for i := range job.Spec.Tasks {
			tk := &job.Spec.Tasks[i]
			for ix := range int(tk.Replicas) {
				pod := podOf(t, job, tk.Name, ix)
				_ = p.OnPodCreate(pod, job)
			}
		}
		// A pod whose name and labels hold no index is refused, not a panic.
		odd := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train-", Namespace: "ns", Labels: map[string]string{}}}
		_ = p.OnPodCreate(odd, job)
		for _, hook := range []func() (Changes, error){
			func() (Changes, error) { return p.OnJobAdd(job) },
			func() (Changes, error) { return p.OnJobUpdate(job) },
			func() (Changes, error) { return p.OnJobDelete(job) },
		} {
			c, err := hook()
			if err != nil {
				continue
			}
			for _, o := range append(append(c.Create, c.Apply...), c.Delete...) {
				if o.GetNamespace() != job.Namespace {
					t.Fatalf("plugin %s %q: an object in namespace %q", name, args, o.GetNamespace())
				}
			}
			for _, o := range append(c.Create, c.Apply...) {
				if o.GetLabels()[shard.SlotLabel] != strconv.Itoa(testSlot) {
					t.Fatalf("plugin %s %q: %s has no slot label", name, args, o.GetName())
				}
			}
		}
	})
}
