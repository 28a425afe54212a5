package bench

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// clientCounter counts the writes an in-process client (the load generator,
// the stand-in scheduler) sends, keyed as apiserver_request_total keys them,
// so that they can be taken out of the API server's counts: what is left on
// the resources ringfire writes is ringfire's.
type clientCounter struct {
	mu     sync.Mutex
	counts requestCounts
}

func newClientCounter() *clientCounter { return &clientCounter{counts: requestCounts{}} }

// wrap is a rest.Config WrapTransport.
func (c *clientCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		k, ok := keyOf(req)
		resp, err := rt.RoundTrip(req)
		if !ok {
			return resp, err
		}
		// A request that got no answer may still have been served: the API
		// server counts it under its own code, this one under "error".
		k.code = "error"
		if err == nil {
			k.code = strconv.Itoa(resp.StatusCode)
		}
		c.mu.Lock()
		c.counts[k]++
		c.mu.Unlock()
		return resp, err
	})
}

// snapshot returns the counts so far.
func (c *clientCounter) snapshot() requestCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(requestCounts, len(c.counts))
	out.add(c.counts)
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// keyOf names a write request as the API server's metrics do, from its
// method and path (/api/v1/namespaces/<ns>/pods/<name>/binding,
// /apis/<group>/<version>/...); reads are not counted (ok false).
func keyOf(req *http.Request) (requestKey, bool) {
	var k requestKey
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodDelete:
		k.verb = req.Method
	case http.MethodPatch:
		k.verb = "PATCH"
		if strings.HasPrefix(req.Header.Get("Content-Type"), "application/apply-patch") {
			k.verb = "APPLY"
		}
	default:
		return k, false
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:] // after v1
	case len(parts) >= 4 && parts[0] == "apis":
		k.group, parts = parts[1], parts[3:]
	default:
		return k, false
	}
	namespaceSubresource := len(parts) == 3 && (parts[2] == "status" || parts[2] == "finalize")
	if len(parts) >= 3 && parts[0] == "namespaces" && !namespaceSubresource {
		parts = parts[2:] // a namespaced resource
	}
	k.resource = parts[0]
	if len(parts) >= 3 {
		k.subresource = parts[2]
	}
	if k.verb == "DELETE" && len(parts) == 1 {
		k.verb = "DELETECOLLECTION"
	}
	return k, true
}
