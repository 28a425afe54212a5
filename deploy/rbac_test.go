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

// What each process writes is read back as one union; a process writing again replaces its file.
func TestUsedFiles(t *testing.T) {
	dir := t.TempDir()
	a := deploy.Permission{Resource: "pods", Verb: "list"}
	b := deploy.Permission{Group: "batch", Resource: "jobs", Verb: "get"}
	c := deploy.Permission{Resource: "secrets", Verb: "create"}
	for _, w := range []struct {
		name string
		ps   []deploy.Permission
	}{{"1", []deploy.Permission{a}}, {"1", []deploy.Permission{a, b}}, {"2", []deploy.Permission{c, a}}} {
		if err := deploy.WriteUsed(dir, w.name, w.ps); err != nil {
			t.Fatal(err)
		}
	}
	used, files, err := deploy.ReadUsed(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Errorf("files %v, want 2", files)
	}
	if want := []deploy.Permission{a, c, b}; !slices.Equal(used, want) {
		t.Errorf("used %v, want %v", used, want)
	}
}

// Every permission on the allow-list is granted: an entry for a rule since removed is stale.
func TestUnexercisedGrantsAreGranted(t *testing.T) {
	granted, err := deploy.Granted()
	if err != nil {
		t.Fatal(err)
	}
	for p, why := range deploy.UnexercisedGrants {
		if !slices.Contains(granted, p) {
			t.Errorf("%s is allowed unexercised (%s) but not granted", p, why)
		}
		if why == "" {
			t.Errorf("%s is allowed unexercised without a reason", p)
		}
	}
}
