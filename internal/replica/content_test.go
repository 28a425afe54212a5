package replica

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// seenRequest is what the fake API server saw of one request.
type seenRequest struct {
	method, path, accept, contentType string
	wrapped                           bool // it went through the config's transport wrapper
}

// headerServer answers every request 404 (a JSON Status) and records its headers.
func headerServer(t *testing.T) (*httptest.Server, func() []seenRequest) {
	var mu sync.Mutex
	var seen []seenRequest
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, seenRequest{
			method: r.Method, path: r.URL.Path, accept: r.Header.Get("Accept"), contentType: r.Header.Get("Content-Type"),
			wrapped: r.Header.Get("X-Wrapped") == "yes",
		})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	}))
	t.Cleanup(api.Close)
	return api, func() []seenRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]seenRequest(nil), seen...)
	}
}

type wrapperFunc func(*http.Request) (*http.Response, error)

func (f wrapperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// The clientset of built-in kinds speaks protobuf by default (and JSON when
// asked), the Volcano clientset JSON always (CRDs have no protobuf), the
// metadata client its own PartialObjectMetadata negotiation; all of them go
// through the transport wrappers of the config they were made from (the
// fence).
func TestClientsContentTypes(t *testing.T) {
	const protoAccept = "application/vnd.kubernetes.protobuf,application/json"
	for _, tc := range []struct {
		contentType       string
		builtinAccept     string
		builtinBodyFormat string
	}{
		{"", protoAccept, "application/vnd.kubernetes.protobuf"},
		{ContentTypeProtobuf, protoAccept, "application/vnd.kubernetes.protobuf"},
		{ContentTypeJSON, "application/json", "application/json"},
	} {
		t.Run("content type "+tc.contentType, func(t *testing.T) {
			api, seen := headerServer(t)
			cfg := &rest.Config{Host: api.URL}
			cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
				return wrapperFunc(func(req *http.Request) (*http.Response, error) {
					req = req.Clone(req.Context())
					req.Header.Set("X-Wrapped", "yes")
					return next.RoundTrip(req)
				})
			})
			c, err := newClients(cfg, tc.contentType, true, true)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
			_, _ = c.kube.CoreV1().Pods("ns").Create(ctx, pod, metav1.CreateOptions{})
			_, _ = c.kube.CoreV1().Events("ns").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}}, metav1.CreateOptions{})
			_, _ = c.kube.BatchV1().Jobs("ns").Get(ctx, "j", metav1.GetOptions{})
			_, _ = c.kube.CoordinationV1().Leases("ns").Get(ctx, "l", metav1.GetOptions{})
			_, _ = c.kube.SchedulingV1().PriorityClasses().List(ctx, metav1.ListOptions{})
			_, _ = c.vc.BatchV1alpha1().Jobs("ns").Create(ctx, &batch.Job{ObjectMeta: metav1.ObjectMeta{Name: "vj", Namespace: "ns"}}, metav1.CreateOptions{})
			_, _ = c.vc.SchedulingV1beta1().Queues().Get(ctx, "q", metav1.GetOptions{})
			_, _ = c.md.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("ns").List(ctx, metav1.ListOptions{})

			reqs := seen()
			if len(reqs) != 8 {
				t.Fatalf("the API server saw %d requests, want 8: %+v", len(reqs), reqs)
			}
			for _, r := range reqs {
				if !r.wrapped {
					t.Errorf("%s %s did not go through the config's transport wrapper", r.method, r.path)
				}
				switch {
				case strings.HasPrefix(r.path, "/apis/batch.volcano.sh/"), strings.HasPrefix(r.path, "/apis/scheduling.volcano.sh/"):
					if r.accept != "application/json" {
						t.Errorf("%s %s (a CRD) accepts %q, want application/json", r.method, r.path, r.accept)
					}
					if r.method == http.MethodPost && r.contentType != "application/json" {
						t.Errorf("%s %s (a CRD) sends %q, want application/json", r.method, r.path, r.contentType)
					}
				case r.method == http.MethodGet && r.path == "/api/v1/namespaces/ns/pods":
					// The metadata client's list: PartialObjectMetadataList, protobuf first, whatever the setting.
					if !strings.HasPrefix(r.accept, "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList") {
						t.Errorf("the metadata client's list accepts %q", r.accept)
					}
				default:
					if r.accept != tc.builtinAccept {
						t.Errorf("%s %s (built-in) accepts %q, want %q", r.method, r.path, r.accept, tc.builtinAccept)
					}
					if r.method == http.MethodPost && r.contentType != tc.builtinBodyFormat {
						t.Errorf("%s %s (built-in) sends %q, want %q", r.method, r.path, r.contentType, tc.builtinBodyFormat)
					}
				}
			}
		})
	}
	if _, err := newClients(&rest.Config{Host: "http://127.0.0.1:1"}, "yaml", false, true); err == nil {
		t.Error("content type yaml was accepted")
	}
}
