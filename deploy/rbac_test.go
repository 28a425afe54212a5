package deploy_test

import (
	"net/url"
	"slices"
	"testing"

	"github.com/ringfire/ringfire/deploy"
)

// A request's permission is the one the API server's authorizer asks for it.
func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		want           string // Permission.String(), or the path of a non-resource request
	}{
		{"GET", "/api/v1/pods?labelSelector=x&limit=500", "list pods"},
		{"GET", "/api/v1/pods?watch=true&resourceVersion=5", "watch pods"},
		{"GET", "/api/v1/watch/pods", "watch pods"},
		{"GET", "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", "watch pods, list pods"},
		{"GET", "/api/v1/namespaces/ns/secrets/j-ssh", "get secrets"},
		{"POST", "/api/v1/namespaces/ns/secrets", "create secrets"},
		{"DELETE", "/api/v1/namespaces/ns/secrets/j-ssh", "delete secrets"},
		{"DELETE", "/api/v1/namespaces/ns/pods", "deletecollection pods"},
		{"POST", "/api/v1/namespaces/ns/pods/p/binding", "create pods/binding"},
		{"PUT", "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/j/status", "update jobs/status.batch.volcano.sh"},
		{"PATCH", "/apis/scheduling.volcano.sh/v1beta1/queues/q", "patch queues.scheduling.volcano.sh"},
		{"GET", "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups?watch=1", "watch podgroups.scheduling.volcano.sh"},
		{"GET", "/api/v1/namespaces", "list namespaces"},
		{"GET", "/api/v1/namespaces/ns", "get namespaces"},
		{"GET", "/apis", "/apis"},
		{"GET", "/version", "/version"},
	} {
		u, err := url.Parse(tc.target)
		if err != nil {
			t.Fatal(err)
		}
		r, err := deploy.ParseRequest(tc.method, u)
		if err != nil {
			t.Errorf("%s %s: %v", tc.method, tc.target, err)
			continue
		}
		got := r.Path
		for i, p := range r.Permissions() {
			if i > 0 {
				got += ", "
			}
			got += p.String()
		}
		if got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.method, tc.target, got, tc.want)
		}
	}
}

// The check names every permission granted and never used, but those allowed, and every one
// used and not granted.
func TestCheckRole(t *testing.T) {
	p := func(group, resource, verb string) deploy.Permission {
		return deploy.Permission{Group: group, Resource: resource, Verb: verb}
	}
	granted := []deploy.Permission{p("", "pods", "list"), p("", "pods", "get"), p("", "secrets", "update"),
		p("batch", "jobs/finalizers", "update")}
	used := []deploy.Permission{p("", "pods", "list"), p("", "pods", "get"), p("", "secrets", "list")}
	allowed := map[deploy.Permission]string{p("batch", "jobs/finalizers", "update"): "admission"}
	c := deploy.CheckRole(granted, used, allowed)
	if c.OK() {
		t.Error("OK with a verb never used and one not granted")
	}
	if want := []deploy.Permission{p("", "secrets", "update")}; !slices.Equal(c.Unused, want) {
		t.Errorf("unused %v, want %v", c.Unused, want)
	}
	if want := []deploy.Permission{p("", "secrets", "list")}; !slices.Equal(c.Ungranted, want) {
		t.Errorf("ungranted %v, want %v", c.Ungranted, want)
	}
	if want := []deploy.Permission{p("batch", "jobs/finalizers", "update")}; !slices.Equal(c.Allowed, want) {
		t.Errorf("allowed %v, want %v", c.Allowed, want)
	}
	if c := deploy.CheckRole(granted[:2], used[:2], nil); !c.OK() {
		t.Errorf("not OK with what was granted all used: %+v", c)
	}
}

// What each process writes is read back as one union, the scheduler's files apart; a process
// writing again replaces its file.
func TestUsedFiles(t *testing.T) {
	dir := t.TempDir()
	a := deploy.Permission{Resource: "pods", Verb: "list"}
	b := deploy.Permission{Group: "batch", Resource: "jobs", Verb: "get"}
	c := deploy.Permission{Resource: "secrets", Verb: "create"}
	n := deploy.Permission{Resource: "nodes", Verb: "list"}
	for _, w := range []struct {
		name string
		ps   []deploy.Permission
	}{{"1", []deploy.Permission{a}}, {"1", []deploy.Permission{a, b}}, {"2", []deploy.Permission{c, a}}, {"2" + deploy.SchedulerUse, []deploy.Permission{n, a}}} {
		if err := deploy.WriteUsed(dir, w.name, w.ps); err != nil {
			t.Fatal(err)
		}
	}
	replicas, scheduler, files, err := deploy.ReadUsed(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Errorf("files %v, want 3", files)
	}
	if want := []deploy.Permission{a, c, b}; !slices.Equal(replicas, want) {
		t.Errorf("used by the replicas %v, want %v", replicas, want)
	}
	if want := []deploy.Permission{n, a}; !slices.Equal(scheduler, want) {
		t.Errorf("used by the scheduler %v, want %v", scheduler, want)
	}
}

// The two roles are checked each against its part: every replica's role against what the
// controllers but the scheduler used, the scheduler's against what it used beyond that one.
func TestCheckRoles(t *testing.T) {
	p := func(resource, verb string) deploy.Permission {
		return deploy.Permission{Resource: resource, Verb: verb}
	}
	replica := []deploy.Permission{p("pods", "list"), p("priorityclasses", "list"), p("podgroups", "update")}
	scheduler := []deploy.Permission{p("nodes", "list"), p("pods/binding", "create")}
	usedReplicas := []deploy.Permission{p("pods", "list"), p("priorityclasses", "list")}
	usedScheduler := []deploy.Permission{p("pods", "list"), p("nodes", "list"), p("pods/binding", "create"), p("podgroups", "update")}
	c := deploy.CheckRoles(replica, scheduler, usedReplicas, usedScheduler, nil)
	if !c.OK() {
		t.Errorf("not OK with each role used by its part: %+v", c)
	}
	if want := []deploy.Permission{p("podgroups", "update")}; !slices.Equal(c.SchedulerOnly, want) {
		t.Errorf("scheduler only %v, want %v", c.SchedulerOnly, want)
	}
	// A replica without the scheduler that reads nodes needs them in every replica's role.
	c = deploy.CheckRoles(replica, scheduler, append(usedReplicas, p("nodes", "list")), usedScheduler, nil)
	if want := []deploy.Permission{p("nodes", "list")}; c.OK() || !slices.Equal(c.Replica.Ungranted, want) {
		t.Errorf("a replica's use of the scheduler's grant: %+v", c)
	}
	// A scheduler grant it never used is unused.
	c = deploy.CheckRoles(replica, scheduler, usedReplicas, []deploy.Permission{p("nodes", "list"), p("podgroups", "update")}, nil)
	if want := []deploy.Permission{p("pods/binding", "create")}; c.OK() || !slices.Equal(c.Scheduler.Unused, want) {
		t.Errorf("a scheduler's grant it never used: %+v", c)
	}
}

// Every permission on the allow-list is granted: an entry for a rule since removed is stale.
func TestUnexercisedGrantsAreGranted(t *testing.T) {
	granted, err := deploy.Granted()
	if err != nil {
		t.Fatal(err)
	}
	scheduler, err := deploy.SchedulerGranted()
	if err != nil {
		t.Fatal(err)
	}
	for p, why := range deploy.UnexercisedGrants {
		if !slices.Contains(granted, p) && !slices.Contains(scheduler, p) {
			t.Errorf("%s is allowed unexercised (%s) but not granted", p, why)
		}
		if why == "" {
			t.Errorf("%s is allowed unexercised without a reason", p)
		}
	}
}

// The gang scheduler's role is what only it needs: nodes and namespaces read, pods bound, and
// every replica's role grants none of that.
func TestSchedulerRoleIsApart(t *testing.T) {
	granted, err := deploy.Granted()
	if err != nil {
		t.Fatal(err)
	}
	scheduler, err := deploy.SchedulerGranted()
	if err != nil {
		t.Fatal(err)
	}
	want := []deploy.Permission{
		{Resource: "namespaces", Verb: "list"}, {Resource: "namespaces", Verb: "watch"},
		{Resource: "nodes", Verb: "list"}, {Resource: "nodes", Verb: "watch"},
		{Resource: "pods/binding", Verb: "create"},
	}
	if !slices.Equal(scheduler, want) {
		t.Errorf("the scheduler's role grants %v, want %v", scheduler, want)
	}
	for _, p := range scheduler {
		if slices.Contains(granted, p) {
			t.Errorf("every replica's role grants %s, the scheduler's alone should", p)
		}
	}
}
