package bench

import (
	"fmt"
	"sort"
	"strings"
)

// ringfireWrites are the kinds of object ringfire may write, as
// "group/resource/subresource": the write rules of its ClusterRole
// (deploy/ringfire/10-rbac.yaml). On any other kind (pods/status, nodes,
// leases, namespaces, serviceaccounts, ...) writes come from the control
// plane (kwok, kube-controller-manager) or the benchmark.
var ringfireWrites = map[string]bool{
	"batch.volcano.sh/jobs/":              true,
	"batch.volcano.sh/jobs/status":        true,
	"batch.volcano.sh/jobs/finalizers":    true,
	"batch.volcano.sh/cronjobs/status":    true,
	"bus.volcano.sh/commands/":            true,
	"scheduling.volcano.sh/podgroups/":    true,
	"scheduling.volcano.sh/queues/status": true,
	"/pods/":                              true,
	"/pods/binding":                       true,
	"/services/":                          true,
	"/configmaps/":                        true,
	"/secrets/":                           true,
	"/persistentvolumeclaims/":            true,
	"/events/":                            true,
	"events.k8s.io/events/":               true,
	"networking.k8s.io/networkpolicies/":  true,
}

func ringfireMayWrite(k requestKey) bool {
	return ringfireWrites[k.group+"/"+k.resource+"/"+k.subresource]
}

// attribution splits the API server's write counts over one load among
// their writers.
type attribution struct {
	jobs      int           // Jobs of the load, for per-Job figures
	apiserver requestCounts // apiserver_request_total, after − before, writes only
	bench     requestCounts // the benchmark process's clients: load generator and stand-in
	events    requestCounts // Event writes of reporters other than ringfire (kube-controller-manager, kwok)
	ringfire  requestCounts // what is left on the kinds ringfire may write
	others    requestCounts // what is left on every other kind: the control plane's
	// negative is the kinds where the benchmark's own counts exceeded the
	// API server's (a request the client gave up on, counted under another
	// code), left out of ringfire's share.
	negative requestCounts
}

func attribute(jobs int, apiserver, bench, events requestCounts) attribution {
	a := attribution{
		jobs: jobs, apiserver: requestCounts{}, bench: bench, events: events,
		ringfire: requestCounts{}, others: requestCounts{}, negative: requestCounts{},
	}
	for k, v := range apiserver {
		if k.isWrite() {
			a.apiserver[k] = v
		}
	}
	rest := a.apiserver.minus(bench).minus(events)
	for k, v := range rest {
		switch {
		case v < 0:
			a.negative[k] = v
		case ringfireMayWrite(k):
			a.ringfire[k] = v
		default:
			a.others[k] = v
		}
	}
	return a
}

// budget is ringfire's writes per Job as the issue "Write budget" counts
// them.
type budget struct {
	writes          float64 // every ringfire write but successful pod creates and bindings
	conflicts       float64 // ringfire requests answered 409
	creates         float64 // ringfire creates (POST of an object, not of an Event or a binding)
	refusedCreates  float64 // of those, answered 409
	jobStatusWrites float64 // jobs/status, any verb and code
	podPosts        float64 // pod creates, any code
	podGroupWrites  float64 // podgroups, any verb and code
	eventWrites     float64 // Events, both APIs, any verb and code
}

func (a attribution) budget() budget {
	var b budget
	for k, v := range a.ringfire {
		isPodCreate := k.group == "" && k.resource == "pods" && k.subresource == "" && k.verb == "POST"
		isBinding := k.group == "" && k.resource == "pods" && k.subresource == "binding"
		isEvent := k.resource == "events"
		if !(isPodCreate && strings.HasPrefix(k.code, "2")) && !isBinding {
			b.writes += v
		}
		if k.code == "409" {
			b.conflicts += v
		}
		if k.verb == "POST" && k.subresource == "" && !isEvent {
			b.creates += v
			if k.code == "409" {
				b.refusedCreates += v
			}
		}
		switch {
		case k.group == "batch.volcano.sh" && k.resource == "jobs" && k.subresource == "status":
			b.jobStatusWrites += v
		case isPodCreate:
			b.podPosts += v
		case k.group == "scheduling.volcano.sh" && k.resource == "podgroups":
			b.podGroupWrites += v
		case isEvent:
			b.eventWrites += v
		}
	}
	return b
}

// table prints the write counts per Job, one row per verb, kind and code,
// with who made them.
func (a attribution) table() string {
	all := requestCounts{}
	all.add(a.apiserver)
	all.add(a.bench)
	per := func(v float64) string {
		if v == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", v/float64(a.jobs))
	}
	var t strings.Builder
	fmt.Fprintf(&t, "API writes per Job (apiserver_request_total, after − before; %d Jobs): all = API server; bench = the benchmark's clients; cp = control plane (kwok, kube-controller-manager; Events by reporter); ringfire = the rest, on kinds ringfire may write\n", a.jobs)
	fmt.Fprintf(&t, "  %-44s %9s %8s %8s %8s %9s\n", "verb kind code", "all", "bench", "cp", "ringfire", "ringfire")
	fmt.Fprintf(&t, "  %-44s %9s %8s %8s %8s %9s\n", "", "/Job", "/Job", "/Job", "/Job", "total")
	for _, k := range all.sortedKeys() {
		if !k.isWrite() {
			continue
		}
		cp := a.others[k] + a.events[k]
		note := ""
		if a.negative[k] != 0 {
			note = fmt.Sprintf("  (bench counted %.0f more than the API server)", -a.negative[k])
		}
		fmt.Fprintf(&t, "  %-44s %9s %8s %8s %8s %9.0f%s\n", k, per(a.apiserver[k]), per(a.bench[k]), per(cp), per(a.ringfire[k]), a.ringfire[k], note)
	}
	return t.String()
}

// crossCheck compares ringfire's share of the API server's counts with the
// replicas' own counts of their requests, per HTTP method.
func (a attribution) crossCheck(replicas requestCounts) string {
	server, own := a.ringfire.byVerb(), requestCounts{}
	for k, v := range replicas {
		if k.isWrite() {
			own[k] = v
		}
	}
	client := own.byVerb()
	verbs := make([]string, 0, len(server)+len(client))
	for v := range server {
		verbs = append(verbs, v)
	}
	for v := range client {
		if _, ok := server[v]; !ok {
			verbs = append(verbs, v)
		}
	}
	sort.Strings(verbs)
	var t strings.Builder
	t.WriteString("cross-check, ringfire's writes by method: attributed from the API server / the replicas' rest_client_requests_total:")
	for _, v := range verbs {
		fmt.Fprintf(&t, " %s %.0f / %.0f;", v, server[v], client[v])
	}
	t.WriteString("\n")
	return t.String()
}
