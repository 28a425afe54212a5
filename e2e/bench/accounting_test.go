package bench

import (
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The pure parts of the accounting, checked without a cluster: plain `go
// test` runs these, in milliseconds, and no benchmark.

func TestAPIServerRequestsByKind(t *testing.T) {
	exposition := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 12
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v2"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="batch.volcano.sh",resource="jobs",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 7
apiserver_request_total_other{code="200"} 99
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="odd",scope="resource",subresource="a\"b\\c",verb="GET",version="v1"} 1e+00
`
	got, err := apiserverRequests(exposition)
	if err != nil {
		t.Fatal(err)
	}
	want := requestCounts{
		{verb: "POST", resource: "pods", code: "201"}:                                                  13,
		{verb: "POST", resource: "pods", code: "409"}:                                                  3,
		{verb: "PUT", group: "batch.volcano.sh", resource: "jobs", subresource: "status", code: "200"}: 7,
		{verb: "GET", resource: "odd", subresource: `a"b\c`, code: "200"}:                              1,
	}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%v: got %v, want %v", k, got[k], v)
		}
	}
}

func TestReplicaRequestsByMethod(t *testing.T) {
	got, err := replicaRequests(`rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 5
rest_client_requests_total{code="409",host="127.0.0.1:6443",method="POST"} 2
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 40
`)
	if err != nil {
		t.Fatal(err)
	}
	if got.writes() != 7 || got.byVerb()["POST"] != 7 {
		t.Errorf("got %v: want 7 writes, all POST", got)
	}
}

func TestKeyOfRequestPaths(t *testing.T) {
	for _, tc := range []struct {
		method, path, contentType string
		want                      requestKey
		counted                   bool
	}{
		{"POST", "/api/v1/namespaces/ns/pods", "", requestKey{verb: "POST", resource: "pods"}, true},
		{"POST", "/api/v1/namespaces/ns/pods/p/binding", "", requestKey{verb: "POST", resource: "pods", subresource: "binding"}, true},
		{"PUT", "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/pg", "", requestKey{verb: "PUT", group: "scheduling.volcano.sh", resource: "podgroups"}, true},
		{"PUT", "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/j/status", "", requestKey{verb: "PUT", group: "batch.volcano.sh", resource: "jobs", subresource: "status"}, true},
		{"POST", "/api/v1/namespaces", "", requestKey{verb: "POST", resource: "namespaces"}, true},
		{"PUT", "/api/v1/namespaces/ns/finalize", "", requestKey{verb: "PUT", resource: "namespaces", subresource: "finalize"}, true},
		{"DELETE", "/api/v1/namespaces/ns/pods", "", requestKey{verb: "DELETECOLLECTION", resource: "pods"}, true},
		{"PATCH", "/api/v1/nodes/n/status", "application/apply-patch+yaml", requestKey{verb: "APPLY", resource: "nodes", subresource: "status"}, true},
		{"GET", "/api/v1/namespaces/ns/pods", "", requestKey{}, false},
		{"POST", "/version", "", requestKey{}, false},
	} {
		req, err := http.NewRequest(tc.method, "https://127.0.0.1:6443"+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", tc.contentType)
		got, counted := keyOf(req)
		if counted != tc.counted || (counted && got != tc.want) {
			t.Errorf("%s %s: got %+v %v, want %+v %v", tc.method, tc.path, got, counted, tc.want, tc.counted)
		}
	}
}

func TestAttributeSplitsWriters(t *testing.T) {
	key := func(verb, group, resource, sub, code string) requestKey {
		return requestKey{verb: verb, group: group, resource: resource, subresource: sub, code: code}
	}
	podCreate, podRefused := key("POST", "", "pods", "", "201"), key("POST", "", "pods", "", "409")
	binding, pgPut := key("POST", "", "pods", "binding", "201"), key("PUT", "scheduling.volcano.sh", "podgroups", "", "200")
	jobPost, jobStatus := key("POST", "batch.volcano.sh", "jobs", "", "201"), key("PUT", "batch.volcano.sh", "jobs", "status", "200")
	podStatus, eventPost := key("PATCH", "", "pods", "status", "200"), key("POST", "", "events", "", "201")
	apiserver := requestCounts{
		podCreate: 100, podRefused: 2, binding: 100, pgPut: 30, jobPost: 10, jobStatus: 40,
		podStatus: 200, eventPost: 25, key("GET", "", "pods", "", "200"): 1000,
	}
	bench := requestCounts{jobPost: 10, binding: 100, pgPut: 10}
	events := requestCounts{eventPost: 5}
	a := attribute(10, apiserver, bench, events)
	if a.ringfire[jobPost] != 0 || a.ringfire[binding] != 0 || a.ringfire[pgPut] != 20 || a.ringfire[eventPost] != 20 {
		t.Errorf("ringfire's share: %v", a.ringfire)
	}
	if a.others[podStatus] != 200 || a.ringfire[podStatus] != 0 {
		t.Errorf("pods/status is kwok's: others %v", a.others)
	}
	b := a.budget()
	// pg 20 + refused 2 + status 40 + events 20; not the 100 pod creates.
	if b.writes != 82 || b.conflicts != 2 || b.creates != 102 || b.refusedCreates != 2 || b.podPosts != 102 || b.jobStatusWrites != 40 {
		t.Errorf("budget %+v", b)
	}
}

func TestOthersEvents(t *testing.T) {
	before := map[types.UID]eventSeen{
		"a": {component: "ringfire-job-controller", count: 1},
		"b": {component: "node-controller", count: 1},
	}
	after := map[types.UID]eventSeen{
		"a": {component: "ringfire-job-controller", count: 4},
		"b": {component: "node-controller", count: 3},
		"c": {component: "kwok_controller", count: 2},
		"d": {component: "ringfire-scheduler", count: 1},
	}
	got, by := othersEvents(before, after)
	post, patch := requestKey{verb: "POST", resource: "events", code: "201"}, requestKey{verb: "PATCH", resource: "events", code: "200"}
	if got[post] != 1 || got[patch] != 3 || len(got) != 2 {
		t.Errorf("got %v, want 1 POST (c) and 3 PATCHes (b twice, c once)", got)
	}
	if by["node-controller"] != 2 || by["kwok_controller"] != 2 {
		t.Errorf("by component %v", by)
	}
}

func TestWindowsGroupByCreation(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	res := loadResult{
		start:   start,
		created: []time.Time{at(0.1), at(1), at(6), at(7), at(12)},
		done:    []time.Time{at(0.6), at(2), at(6.5), {}, at(20)},
	}
	ws := windows(res, 5*time.Second)
	if len(ws) != 3 || len(ws[0].latencies) != 2 || ws[1].missing != 1 || len(ws[2].latencies) != 1 {
		t.Fatalf("windows %+v", ws)
	}
	if _, worst := reportWindows(ws, 5*time.Second); worst != 8*time.Second {
		t.Errorf("worst p99 %v, want 8s", worst)
	}
}
