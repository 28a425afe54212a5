package opsserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// The guard's answers without an API server: what it asks the authorizer
// (get on the path, a non-resource URL, as the authenticated user) and what
// it answers for each outcome.
func TestAccessGuardAnswers(t *testing.T) {
	var asked authorizer.Attributes
	authzErr := errors.New("the API server did not answer")
	g := &accessGuard{
		authn: authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
			switch r.Header.Get("Authorization") {
			case "Bearer reader", "Bearer stranger", "Bearer unlucky":
				name := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
			case "Bearer broken":
				return nil, false, errors.New("token review failed")
			}
			return nil, false, nil
		}),
		authz: authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
			asked = a
			switch a.GetUser().GetName() {
			case "reader":
				return authorizer.DecisionAllow, "", nil
			case "unlucky":
				return authorizer.DecisionNoOpinion, "", authzErr
			}
			return authorizer.DecisionNoOpinion, "no rule", nil
		}),
		info: &request.RequestInfoFactory{APIPrefixes: sets.NewString(), GrouplessAPIPrefixes: sets.NewString()},
		log:  hclog.NewNullLogger(),
	}
	h := g.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("metrics")) }))
	for _, tc := range []struct {
		token    string
		code     int
		contains string
	}{
		{"", 401, "Unauthorized"},
		{"unknown", 401, "Unauthorized"},
		{"broken", 401, "Unauthorized"},
		{"stranger", 403, `"stranger" may not get /status.json`},
		{"unlucky", 500, "could not check access"},
		{"reader", 200, "metrics"},
	} {
		asked = nil
		req := httptest.NewRequest(http.MethodGet, "/status.json", nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.contains) {
			t.Errorf("token %q: HTTP %d %q, want %d with %q", tc.token, rec.Code, rec.Body.String(), tc.code, tc.contains)
		}
		if tc.code != http.StatusUnauthorized {
			if asked == nil || asked.GetVerb() != "get" || asked.GetPath() != "/status.json" || asked.IsResourceRequest() {
				t.Errorf("token %q: asked %+v, want get on the non-resource URL /status.json", tc.token, asked)
			}
		} else if asked != nil {
			t.Errorf("token %q: the authorizer was asked about a caller not authenticated", tc.token)
		}
	}
}
