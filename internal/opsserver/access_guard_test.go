package opsserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
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
	h := g.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Error("the handler was given the caller's token")
		}
		w.Write([]byte("metrics"))
	}))
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
		{" bearer reader ", 200, "metrics"},
		{"Bearer reader and more", 200, "metrics"}, // the token ends at a space, as the API server reads it
		{"Bearer  reader", 401, "Unauthorized"},    // an empty token, then more
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
// the TTLs and again after them; keeps no answer it could not get, nor a
// refusal the API server gave a reason for; tries a failed review again only
// when the failure may pass, 5 times at most; asks one question once at a
// time however many callers want it; and keeps no more than reviewCacheSize
// answers whatever callers send.
func TestReviewerCachesAndBounds(t *testing.T) {
	client := fake.NewClientset()
	var tokenReviews, accessReviews, failNext atomic.Int32
	gate := make(chan struct{})
	client.PrependReactor("create", "tokenreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		tokenReviews.Add(1)
		if failNext.Load() > 0 {
			failNext.Add(-1)
			return true, nil, apierrors.NewServiceUnavailable("try again")
		}
		review := a.(clienttesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		token := review.Spec.Token
		switch {
		case token == "good-slow":
			<-gate
			fallthrough
		case strings.HasPrefix(token, "good-"):
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true,
				User: authenticationv1.UserInfo{Username: strings.TrimPrefix(token, "good-"), Groups: []string{"g"},
					Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}}
		case token == "backend-down":
			review.Status.Error = "the token backend is down"
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
			slices.Equal(review.Spec.Groups, []string{"g", "system:authenticated"}) && review.Spec.Extra["k"][0] == "v"
		return true, review, nil
	})
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	r, err := newReviewer(client)
	if err != nil {
		t.Fatal(err)
	}
	r.tokens.now, r.access.now = clock, clock
	ctx := context.Background()
	reviews := func(wantTokens, wantAccess int32, when string) {
		t.Helper()
		if n, m := tokenReviews.Load(), accessReviews.Load(); n != wantTokens || m != wantAccess {
			t.Fatalf("%s: %d token reviews and %d access reviews, want %d and %d", when, n, m, wantTokens, wantAccess)
		}
	}

	var reader caller
	for range 3 {
		who, ok, err := r.authenticate(ctx, "good-reader")
		if err != nil || !ok || who.name != "reader" {
			t.Fatalf("authenticate(good-reader) = %+v, %v, %v", who, ok, err)
		}
		reader = who
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
	reviews(2, 2, "within the TTLs")
	now = now.Add(tokenCacheTTL)
	r.authenticate(ctx, "good-reader")
	r.authenticate(ctx, "bad")
	r.authorize(ctx, reader, "get", "/metrics")
	r.authorize(ctx, reader, "get", "/other")
	reviews(4, 4, "after the TTLs")
	if _, ok, _ := r.authenticate(ctx, ""); ok {
		t.Fatal("an empty token was accepted")
	}
	reviews(4, 4, "after an empty token")

	// A refusal with the API server's reason is not kept.
	for want := int32(5); want <= 6; want++ {
		if _, ok, err := r.authenticate(ctx, "backend-down"); ok || err == nil || !strings.Contains(err.Error(), "backend is down") {
			t.Fatalf("a token refused with a reason: ok %v, %v; want the reason", ok, err)
		}
		reviews(want, 4, "a token refused with a reason, asked again")
	}

	// A failure that may pass is tried again, and the answer then kept; one
	// that will not is returned at once, and not kept; one that does not
	// pass is given up after 5 attempts.
	failNext.Store(1)
	if _, ok, err := r.authenticate(ctx, "good-retried"); err != nil || !ok {
		t.Fatalf("after an unavailable API server: ok %v, %v", ok, err)
	}
	r.authenticate(ctx, "good-retried")
	reviews(8, 4, "a review retried once, then its answer kept")
	for want := int32(5); want <= 6; want++ {
		if _, _, err := r.authorize(ctx, caller{name: "forbidden-to-ask"}, "get", "/metrics"); err == nil {
			t.Fatal("a review ringfire may not make: no error")
		}
		reviews(8, want, "a review ringfire may not make, asked once and not kept")
	}
	failNext.Store(reviewAttempts + 1)
	if _, _, err := r.authenticate(ctx, "good-never"); err == nil {
		t.Fatal("an API server unavailable throughout: no error")
	}
	reviews(8+reviewAttempts, 6, "an API server unavailable throughout")
	failNext.Store(0)

	// One question at a time: callers that want the same answer wait for it.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, ok, err := r.authenticate(ctx, "good-slow"); err != nil || !ok {
				t.Errorf("a caller waiting for another's review: ok %v, %v", ok, err)
			}
		})
	}
	for i := 0; tokenReviews.Load() < 8+reviewAttempts+1; i++ {
		if i == 10_000 {
			t.Fatal("no review of the slow token within 10 s")
		}
		time.Sleep(time.Millisecond) // the first review is in the reactor, held at the gate
	}
	// The others wait for it, or, coming later, find its answer kept: one
	// review either way.
	time.Sleep(20 * time.Millisecond)
	close(gate)
	wg.Wait()
	reviews(8+reviewAttempts+1, 6, "8 callers of one token at once")

	// Callers choose tokens and paths; the caches stay bounded.
	for i := range 3 * reviewCacheSize {
		r.authorize(ctx, reader, "get", fmt.Sprintf("/p%d", i))
		r.authenticate(ctx, fmt.Sprintf("bad-%d", i))
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
		// Counts and lengths that could be read as each other's.
		"a group like encoded fields": accessKey(caller{name: "u", uid: "1", groups: []string{"0:0:0:6:xxxxxx"}, extra: base.extra}, "get", "/metrics"),
		"empty groups, then one":      accessKey(caller{name: "u", uid: "1", groups: []string{"", "", "", "xxxxxx"}, extra: base.extra}, "get", "/metrics"),
	} {
		if other, dup := keys[k]; dup {
			t.Errorf("%s and %s share a key", name, other)
		}
		keys[k] = name
	}
}
