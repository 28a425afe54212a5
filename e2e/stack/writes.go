package stack

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// writeLog records the API writes (every request but GET) of the stack's replicas, and the
// requests RBAC refused; every request's permission goes to the process's record (used.go).
type writeLog struct {
	mu        sync.Mutex
	writes    []string // "METHOD path", in order
	forbidden []string // "METHOD path?query" answered 403
	conflicts []RefusedCreate
}

// RefusedCreate is a create of a replica the API server refused with 409 (AlreadyExists): a
// write spent on an object that was there already.
type RefusedCreate struct {
	At   time.Time
	What string // the API server's message, naming the object
}

func (l *writeLog) wrap(rt http.RoundTripper) http.RoundTripper { return l.wrapAs(false)(rt) }

// wrapAs is wrap for the gang scheduler's requests (scheduler), whose permissions are
// recorded apart: they are checked against the scheduler's own role.
func (l *writeLog) wrapAs(scheduler bool) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper { return l.roundTripper(rt, scheduler) }
}

func (l *writeLog) roundTripper(rt http.RoundTripper, scheduler bool) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		recordUsed(req, scheduler)
		if req.Method != http.MethodGet {
			l.mu.Lock()
			l.writes = append(l.writes, req.Method+" "+req.URL.Path)
			l.mu.Unlock()
		}
		resp, err := rt.RoundTrip(req)
		switch {
		case err != nil:
		case resp.StatusCode == http.StatusForbidden:
			l.mu.Lock()
			l.forbidden = append(l.forbidden, req.Method+" "+req.URL.RequestURI())
			l.mu.Unlock()
		case resp.StatusCode == http.StatusConflict && req.Method == http.MethodPost:
			// The status in the body names the object; it is small, and read back for the client.
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(body))
			what := req.URL.Path
			if msg := statusMessage(body); msg != "" {
				what = msg
			}
			l.mu.Lock()
			l.conflicts = append(l.conflicts, RefusedCreate{At: time.Now(), What: what})
			l.mu.Unlock()
		}
		return resp, err
	})
}

// RefusedCreates returns the replicas' creates that the API server answered with 409, in order.
func (s *Stack) RefusedCreates() []RefusedCreate {
	s.writes.mu.Lock()
	defer s.writes.mu.Unlock()
	return slices.Clone(s.writes.conflicts)
}

// Writes returns the replicas' API writes so far ("METHOD path"), in order.
func (s *Stack) Writes() []string {
	s.writes.mu.Lock()
	defer s.writes.mu.Unlock()
	return slices.Clone(s.writes.writes)
}

// refused returns the requests RBAC refused.
func (l *writeLog) refused() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.forbidden)
}

// statusMessage is the message of the Status an error answer carries, in JSON (the Volcano
// kinds, and built-in kinds with --kube-api-content-type json) or protobuf (built-in kinds by
// default); "" if body is neither.
func statusMessage(body []byte) string {
	obj, _, err := statusCodecs.UniversalDeserializer().Decode(body, nil, nil)
	if st, ok := obj.(*metav1.Status); ok && err == nil {
		return st.Message
	}
	return ""
}

// statusCodecs decode a metav1.Status in any of the API server's formats.
var statusCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(s)
}()

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func (l *writeLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.writes)
}

// since summarizes the writes after the first n: each "METHOD path" with its count.
func (l *writeLog) since(n int) string {
	l.mu.Lock()
	counts := map[string]int{}
	for _, w := range l.writes[n:] {
		counts[w]++
	}
	l.mu.Unlock()
	lines := make([]string, 0, len(counts))
	for w, c := range counts {
		lines = append(lines, fmt.Sprintf("%5d  %s", c, w))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// Quiet checks that the replicas leave a cluster whose work is done alone: no API write for
// window, looked for over limit. A controller that reacts to its own writes (a status that
// never settles, a write per resync) fails it, with the writes it kept making.
func (s *Stack) Quiet(t testing.TB, window, limit time.Duration) {
	t.Helper()
	start := time.Now()
	mark, since := s.writes.count(), time.Now()
	for deadline := start.Add(limit); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if n := s.writes.count(); n != mark {
			mark, since = n, time.Now()
		} else if time.Since(since) >= window {
			t.Logf("replicas quiet: no API write for %v, %v after the work was done", window, since.Sub(start).Round(time.Millisecond))
			return
		}
	}
	first := s.writes.count()
	time.Sleep(window)
	t.Errorf("replicas still write to the API server %v after the work was done; in the last %v:\n%s", limit, window, s.writes.since(first))
}
