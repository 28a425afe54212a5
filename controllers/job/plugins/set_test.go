package plugins

import (
	"errors"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// allPlugins is a Job of a master and two workers that names every plugin.
func allPlugins() *batch.Job {
	job := testJob(task("master", 1), task("worker", 2))
	job.Spec.Plugins = map[string][]string{
		"tensorflow": {"--ps=master"}, "svc": nil, "ssh": nil, "env": nil, "pytorch": nil, "mpi": {"--port=2222"},
		"ray": {"--head=master", "--headContainer=main", "--workerContainer=main"}, "hcclrank": nil,
	}
	return job
}

func TestForJob(t *testing.T) {
	set, err := ForJob(allPlugins(), Env{Slot: testSlot, NewSSHKey: fixedKeys})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, p := range set {
		order = append(order, p.Name())
	}
	equal(t, "order", order, []string{"env", "hcclrank", "mpi", "pytorch", "ray", "ssh", "svc", "tensorflow"})

	if set, err := ForJob(testJob(task("a", 1)), Env{}); err != nil || len(set) != 0 {
		t.Errorf("a Job without plugins: %v, %v", set, err)
	}

	job := allPlugins()
	job.Spec.Plugins["zzz"] = nil
	job.Spec.Plugins["mpi"] = []string{"--port=0"}
	_, err = ForJob(job, Env{})
	if err == nil || !strings.HasPrefix(err.Error(), "plugin mpi: --port=0 is not a port number") {
		t.Errorf("error %v, want the first bad plugin by name (mpi)", err)
	}
}

// Arguments a plugin skips are told once per life of the Job: until its OnJobAdd has marked it.
func TestSetIgnored(t *testing.T) {
	job := allPlugins()
	job.Spec.Plugins["svc"] = []string{"--bogus"}
	job.Spec.Plugins["env"] = []string{"x"}
	set, err := ForJob(job, Env{Slot: testSlot, NewSSHKey: fixedKeys})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, err := range set.Ignored(job) {
		got = append(got, err.Error())
	}
	equal(t, "ignored", got, []string{
		"plugin env: the plugin takes no arguments: they are ignored",
		"plugin svc: flag provided but not defined: -bogus: it and the arguments after it are ignored " +
			"(the plugin takes --disable-network-policy, --inject-hosts-env, --publish-not-ready-addresses)",
	})
	if _, err := set.OnJobAdd(job); err != nil {
		t.Fatal(err)
	}
	if got := set.Ignored(job); len(got) != 0 {
		t.Errorf("ignored after OnJobAdd: %v", got)
	}
}

func TestSetPodIsDeterministic(t *testing.T) {
	job := allPlugins()
	set, err := ForJob(job, Env{Slot: testSlot, NewSSHKey: fixedKeys})
	if err != nil {
		t.Fatal(err)
	}
	first := podOf(t, job, "master", 0)
	if err := set.OnPodCreate(first, job); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		again := podOf(t, job, "master", 0)
		if err := set.OnPodCreate(again, job); err != nil {
			t.Fatal(err)
		}
		equal(t, "second build of the pod", again, first)
	}
	env := envOf(first.Spec.Containers[0])
	for _, name := range []string{"VC_TASK_INDEX", "MPI_HOST", "RANK", "TF_CONFIG"} {
		if _, ok := env[name]; !ok {
			t.Errorf("no %s in the master's container", name)
		}
	}
	if first.Annotations[HCCLRankAnnotation] != "0" || len(first.Spec.Containers[0].Command) != 3 {
		t.Errorf("hcclrank annotation %q, command %q", first.Annotations[HCCLRankAnnotation], first.Spec.Containers[0].Command)
	}
	if got := len(first.Spec.Volumes); got != 2 {
		t.Errorf("%d volumes, want the ssh Secret and the hosts ConfigMap", got)
	}
}

func TestSetMarks(t *testing.T) {
	job := allPlugins()
	set, err := ForJob(job, Env{Slot: testSlot, NewSSHKey: fixedKeys})
	if err != nil {
		t.Fatal(err)
	}
	c, err := set.OnJobAdd(job)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "created", names(c.Create), []string{
		"Service ns/train-head-svc", "Secret ns/train-ssh", "Service ns/train", "NetworkPolicy ns/train",
	})
	equal(t, "applied", names(c.Apply), []string{"ConfigMap ns/train-svc"})
	for _, o := range append(c.Create, c.Apply...) {
		owned(t, o, job)
	}
	marks := map[string]string{}
	for _, name := range Names() {
		marks["plugin-"+name] = name
	}
	equal(t, "marks", job.Status.ControlledResources, marks)

	// Once marked, adding again asks for nothing; updating still refreshes the hosts.
	if c, _ := set.OnJobAdd(job); len(c.Create)+len(c.Apply)+len(c.Delete) != 0 {
		t.Errorf("second OnJobAdd asks for %+v", c)
	}
	if c, _ := set.OnJobUpdate(job); len(c.Apply) != 1 {
		t.Errorf("OnJobUpdate asks for %+v, want the hosts ConfigMap", c)
	}

	job.Status.ControlledResources["volume-pvc-data"] = "data"
	c, err = set.OnJobDelete(job)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "deleted", names(c.Delete), []string{
		"Service ns/train-head-svc", "Secret ns/train-ssh", "ConfigMap ns/train-svc", "Service ns/train", "NetworkPolicy ns/train",
	})
	equal(t, "marks after delete", job.Status.ControlledResources, map[string]string{"volume-pvc-data": "data"})
	if c, _ := set.OnJobDelete(job); len(c.Delete) != 0 {
		t.Errorf("second OnJobDelete deletes %v", names(c.Delete))
	}
}

func TestSetErrorsLeaveMarksAlone(t *testing.T) {
	job := testJob(task("worker", 1))
	job.Spec.Plugins = map[string][]string{"env": nil, "ssh": nil}
	broken := func() (KeyPair, error) { return KeyPair{}, errors.New("no entropy") }
	set, err := ForJob(job, Env{NewSSHKey: broken})
	if err != nil {
		t.Fatal(err)
	}
	_, err = set.OnJobAdd(job)
	if err == nil || err.Error() != "plugin ssh: no entropy" {
		t.Errorf("error %v, want plugin ssh: no entropy", err)
	}
	if len(job.Status.ControlledResources) != 0 {
		t.Errorf("marks after a failed OnJobAdd: %v", job.Status.ControlledResources)
	}

	before := map[string]string{"plugin-env": "env"}
	job.Status.ControlledResources = maps.Clone(before)
	stray := &corev1.Pod{}
	stray.Name = "stray"
	if err := set.OnPodCreate(stray, job); err == nil || !strings.HasPrefix(err.Error(), "plugin env on pod stray: ") {
		t.Errorf("error %v, want it to name the plugin and the pod", err)
	}
	equal(t, "marks", job.Status.ControlledResources, before)
}

// Every plugin applies (creates, else updates) ConfigMaps only: the controller may update no
// other kind it makes, and the role grants update on no other.
func TestOnlyConfigMapsAreApplied(t *testing.T) {
	set, err := ForJob(allPlugins(), Env{Slot: testSlot, NewSSHKey: fixedKeys})
	if err != nil {
		t.Fatal(err)
	}
	job := allPlugins()
	add, err := set.OnJobAdd(job)
	if err != nil {
		t.Fatal(err)
	}
	update, err := set.OnJobUpdate(job)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range append(add.Apply, update.Apply...) {
		if _, ok := obj.(*corev1.ConfigMap); !ok {
			t.Errorf("applied %T %s: only ConfigMaps may be", obj, obj.GetName())
		}
	}
}
