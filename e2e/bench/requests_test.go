package bench

import (
	"fmt"
	"sort"
	"strings"
)

// requestKey names a kind of API request as the API server's
// apiserver_request_total does: verb (POST, PUT, PATCH, APPLY, DELETE, ...),
// API group ("" for core), resource, subresource and HTTP code.
type requestKey struct {
	verb, group, resource, subresource, code string
}

// String is "POST pods/binding 201", with the group when it is not core.
func (k requestKey) String() string {
	r := k.resource
	if k.group != "" {
		r += "." + k.group
	}
	if k.subresource != "" {
		r += "/" + k.subresource
	}
	return fmt.Sprintf("%s %s %s", k.verb, r, k.code)
}

// isWrite reports whether the verb changes state.
func (k requestKey) isWrite() bool {
	switch k.verb {
	case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
		return true
	}
	return false
}

// requestCounts counts requests by kind.
type requestCounts map[requestKey]float64

// minus returns c − o, dropping kinds that did not change.
func (c requestCounts) minus(o requestCounts) requestCounts {
	out := requestCounts{}
	for k, v := range c {
		if d := v - o[k]; d != 0 {
			out[k] = d
		}
	}
	for k, v := range o {
		if _, ok := c[k]; !ok && v != 0 {
			out[k] = -v
		}
	}
	return out
}

// add adds o into c.
func (c requestCounts) add(o requestCounts) {
	for k, v := range o {
		c[k] += v
	}
}

// writes returns the total of the write requests.
func (c requestCounts) writes() float64 {
	sum := 0.0
	for k, v := range c {
		if k.isWrite() {
			sum += v
		}
	}
	return sum
}

// sortedKeys returns the kinds ordered by resource, subresource, verb, code.
func (c requestCounts) sortedKeys() []requestKey {
	keys := make([]requestKey, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.group+a.resource != b.group+b.resource {
			return a.group+"/"+a.resource < b.group+"/"+b.resource
		}
		if a.subresource != b.subresource {
			return a.subresource < b.subresource
		}
		if a.verb != b.verb {
			return a.verb < b.verb
		}
		return a.code < b.code
	})
	return keys
}

// apiserverRequests reads apiserver_request_total out of the API server's
// /metrics, summed over the labels it does not key on (version, scope,
// component, dry_run).
func apiserverRequests(exposition string) (requestCounts, error) {
	ss, err := samples(exposition, "apiserver_request_total")
	if err != nil {
		return nil, err
	}
	if len(ss) == 0 {
		return nil, fmt.Errorf("no apiserver_request_total in the API server's /metrics")
	}
	out := requestCounts{}
	for _, s := range ss {
		l := s.labels
		out[requestKey{verb: l["verb"], group: l["group"], resource: l["resource"], subresource: l["subresource"], code: l["code"]}] += s.value
	}
	return out, nil
}

// replicaRequests reads a replica's own count of its API requests,
// rest_client_requests_total (internal/kubemetrics), by HTTP method and
// code: client-go does not say which resource a request was for.
func replicaRequests(exposition string) (requestCounts, error) {
	ss, err := samples(exposition, "rest_client_requests_total")
	if err != nil {
		return nil, err
	}
	out := requestCounts{}
	for _, s := range ss {
		out[requestKey{verb: strings.ToUpper(s.labels["method"]), code: s.labels["code"]}] += s.value
	}
	return out, nil
}

// byVerb sums counts per verb, with APPLY counted as PATCH and
// DELETECOLLECTION as DELETE, as a client sees their HTTP methods.
func (c requestCounts) byVerb() map[string]float64 {
	out := map[string]float64{}
	for k, v := range c {
		verb := k.verb
		switch verb {
		case "APPLY":
			verb = "PATCH"
		case "DELETECOLLECTION":
			verb = "DELETE"
		}
		out[verb] += v
	}
	return out
}
