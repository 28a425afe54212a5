package opsserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// The guard's answers without an API server: what it asks (get on the path,
// a non-resource URL, as the authenticated user) and what it answers for
// each outcome.
func TestAccessGuardAnswers(t *testing.T) {
	type question struct{ user, verb, path string }
	var asked *question
	authzErr := errors.New("the API server did not answer")
	g := &accessGuard{
		authenticate: func(_ context.Context, token string) (caller, bool, error) {
			switch token {
			case "reader", "stranger", "unlucky":
				return caller{name: token}, true, nil
			case "broken":
				return caller{}, false, errors.New("token review failed")
			}
			return caller{}, false, nil
		},
		authorize: func(_ context.Context, who caller, verb, path string) (bool, string, error) {
			asked = &question{who.name, verb, path}
			switch who.name {
			case "reader":
				return true, "", nil
			case "unlucky":
				return false, "", authzErr
			}
			return false, "no rule", nil
		},
		log: hclog.NewNullLogger(),
	}
	h := g.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("metrics")) }))
	for _, tc := range []struct {
		header   string
		code     int
		contains string
	}{
		{"", 401, "Unauthorized"},
		{"Bearer unknown", 401, "Unauthorized"},
		{"Bearer broken", 401, "Unauthorized"},
		{"Basic reader", 401, "Unauthorized"},
		{"Bearer", 401, "Unauthorized"},
		{"Bearer stranger", 403, `"stranger" may not get /status.json`},
		{"Bearer unlucky", 500, "could not check access"},
		{"Bearer reader", 200, "metrics"},
		{"bearer  reader ", 200, "metrics"},
	} {
		asked = nil
		req := httptest.NewRequest(http.MethodGet, "/status.json", nil)
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.contains) {
			t.Errorf("%q: HTTP %d %q, want %d with %q", tc.header, rec.Code, rec.Body.String(), tc.code, tc.contains)
		}
		if tc.code != http.StatusUnauthorized {
			if asked == nil || asked.verb != "get" || asked.path != "/status.json" {
				t.Errorf("%q: asked %+v, want get on /status.json", tc.header, asked)
			}
		} else if asked != nil {
			t.Errorf("%q: the authorizer was asked about a caller not authenticated", tc.header)
		}
	}
}

// The reviewer asks the API server once per token and per question within
// the TTLs, again after them, forgets nothing it could not ask, tries a
// failed review again only when the failure may pass, and keeps no more
// than reviewCacheSize answers whatever callers send.
func TestReviewerCachesAndBounds(t *testing.T) {
	client := fake.NewClientset()
	var tokenReviews, accessReviews, failNext atomic.Int32
	client.PrependReactor("create", "tokenreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		tokenReviews.Add(1)
		if failNext.Load() > 0 {
			failNext.Add(-1)
			return true, nil, apierrors.NewServiceUnavailable("try again")
		}
		review := a.(clienttesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		if strings.HasPrefix(review.Spec.Token, "good-") {
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true,
				User: authenticationv1.UserInfo{Username: strings.TrimPrefix(review.Spec.Token, "good-"), Groups: []string{"g"},
					Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}}
		}
		return true, review, nil
	})
	client.PrependReactor("create", "subjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		accessReviews.Add(1)
		review := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		if review.Spec.User == "forbidden-to-ask" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}, "", errors.New("no"))
		}
		na := review.Spec.NonResourceAttributes
		review.Status.Allowed = review.Spec.User == "reader" && na != nil && na.Verb == "get" && na.Path == "/metrics" &&
			len(review.Spec.Groups) == 1 && review.Spec.Extra["k"][0] == "v"
		return true, review, nil
	})
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	r := &reviewer{client: client, tokens: newAnswers[tokenAnswer](), access: newAnswers[accessAnswer]()}
	r.tokens.now, r.access.now = clock, clock
	ctx := context.Background()

	for range 3 {
		who, ok, err := r.authenticate(ctx, "good-reader")
		if err != nil || !ok || who.name != "reader" {
			t.Fatalf("authenticate(good-reader) = %+v, %v, %v", who, ok, err)
		}
		if allowed, _, err := r.authorize(ctx, who, "get", "/metrics"); err != nil || !allowed {
			t.Fatalf("authorize(reader, get /metrics) = %v, %v", allowed, err)
		}
		if allowed, _, err := r.authorize(ctx, who, "get", "/other"); err != nil || allowed {
			t.Fatalf("authorize(reader, get /other) = %v, %v", allowed, err)
		}
		if _, ok, err := r.authenticate(ctx, "bad"); err != nil || ok {
			t.Fatalf("authenticate(bad) = %v, %v", ok, err)
		}
	}
	if n, m := tokenReviews.Load(), accessReviews.Load(); n != 2 || m != 2 {
		t.Fatalf("within the TTLs: %d token reviews and %d access reviews, want 2 and 2", n, m)
	}
	now = now.Add(tokenCacheTTL)
	if _, ok, _ := r.authenticate(ctx, "good-reader"); !ok || tokenReviews.Load() != 3 {
		t.Fatalf("after the TTL: %d token reviews, want the token asked again (3)", tokenReviews.Load())
	}
	if _, ok, _ := r.authenticate(ctx, ""); ok || tokenReviews.Load() != 3 {
		t.Fatal("an empty token was sent for review")
	}

	// A failure that may pass is tried again (and its answer kept); one that
	// will not is returned at once, and not kept.
	failNext.Store(1)
	if _, ok, err := r.authenticate(ctx, "good-retried"); err != nil || !ok || tokenReviews.Load() != 5 {
		t.Fatalf("after an unavailable API server: ok %v, %v, %d token reviews; want it tried again (5)", ok, err, tokenReviews.Load())
	}
	for want := int32(3); want <= 4; want++ {
		if _, _, err := r.authorize(ctx, caller{name: "forbidden-to-ask"}, "get", "/metrics"); err == nil || accessReviews.Load() != want {
			t.Fatalf("a review ringfire may not make: %v after %d access reviews, want an error after %d (asked once, not kept)", err, accessReviews.Load(), want)
		}
	}

	// Callers choose tokens and paths; the caches stay bounded.
	for i := range 3 * reviewCacheSize {
		r.authorize(ctx, caller{name: "reader"}, "get", "/p"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+time.Duration(i).String())
		r.authenticate(ctx, "bad-"+time.Duration(i).String())
	}
	if n, m := len(r.access.keep), len(r.tokens.keep); n > reviewCacheSize || m > reviewCacheSize {
		t.Errorf("%d access answers and %d token answers kept, want at most %d each", n, m, reviewCacheSize)
	}
}

// Questions that differ in any field have different keys.
func TestAccessKeyDistinguishesQuestions(t *testing.T) {
	base := caller{name: "u", uid: "1", groups: []string{"a", "b"}, extra: map[string][]string{"k": {"v"}}}
	keys := map[[32]byte]string{}
	for name, k := range map[string][32]byte{
		"base":          accessKey(base, "get", "/metrics"),
		"verb":          accessKey(base, "post", "/metrics"),
		"path":          accessKey(base, "get", "/"),
		"name":          accessKey(caller{name: "v", uid: "1", groups: base.groups, extra: base.extra}, "get", "/metrics"),
		"groups joined": accessKey(caller{name: "u", uid: "1", groups: []string{"ab"}, extra: base.extra}, "get", "/metrics"),
		"no extra":      accessKey(caller{name: "u", uid: "1", groups: base.groups}, "get", "/metrics"),
		"name in uid":   accessKey(caller{name: "u1", groups: base.groups, extra: base.extra}, "get", "/metrics"),
	} {
		if other, dup := keys[k]; dup {
			t.Errorf("%s and %s share a key", name, other)
		}
		keys[k] = name
	}
}
