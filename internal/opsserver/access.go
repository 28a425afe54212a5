package opsserver

import (
	"fmt"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The caching of the API server's answers, as kube-controller-manager's
// defaults (--authentication-token-webhook-cache-ttl, and the authorization
// webhook's allowed and denied TTLs): a scraper every few seconds costs one
// TokenReview and one SubjectAccessReview per 10 seconds, and a revoked
// token or role stops working within 10 seconds.
const (
	tokenCacheTTL   = 10 * time.Second
	allowedCacheTTL = 10 * time.Second
	deniedCacheTTL  = 10 * time.Second
	reviewTimeout   = 10 * time.Second
)

// reviewBackoff retries a TokenReview or SubjectAccessReview that failed, as
// the API server's own delegating options do (DefaultAuthWebhookRetryBackoff).
func reviewBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// accessGuard lets in only the requests whose bearer token the API server
// accepts (a TokenReview) and whose user it allows to get the path (a
// SubjectAccessReview on the non-resource URL), as kube-controller-manager
// guards its /metrics. Both answers are cached.
type accessGuard struct {
	authn authenticator.Request
	authz authorizer.Authorizer
	info  request.RequestInfoResolver
	log   hclog.Logger
}

// newAccessGuard builds a guard that asks the API server kube reaches.
func newAccessGuard(kube *rest.Config, log hclog.Logger) (*accessGuard, error) {
	client, err := kubernetes.NewForConfig(kube)
	if err != nil {
		return nil, fmt.Errorf("client for token and access reviews: %w", err)
	}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                nil, // no token, no entry
		TokenAccessReviewClient:  client.AuthenticationV1(),
		TokenAccessReviewTimeout: reviewTimeout,
		WebhookRetryBackoff:      reviewBackoff(),
		CacheTTL:                 tokenCacheTTL,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("delegated authentication: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: client.AuthorizationV1(),
		AllowCacheTTL:             allowedCacheTTL,
		DenyCacheTTL:              deniedCacheTTL,
		WebhookRetryBackoff:       reviewBackoff(),
	}.New()
	if err != nil {
		return nil, fmt.Errorf("delegated authorization: %w", err)
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	// No API prefixes: every path here is a non-resource URL, whose verb is
	// the HTTP method's (get for GET).
	info := &request.RequestInfoFactory{APIPrefixes: sets.NewString(), GrouplessAPIPrefixes: sets.NewString()}
	return &accessGuard{authn: authn, authz: authz, info: info, log: log.Named("access")}, nil
}

// wrap serves next to the requests the API server lets in: 401 without a
// valid token, 403 for a user not allowed the path, 500 when the API
// server could not be asked.
func (g *accessGuard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := g.authn.AuthenticateRequest(r)
		if err != nil || !ok {
			if err != nil {
				g.log.Debug("authentication failed", "path", r.URL.Path, "remote", r.RemoteAddr, "error", err)
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="ringfire"`)
			http.Error(w, "Unauthorized: send a bearer token the Kubernetes API server accepts (a ServiceAccount's token)", http.StatusUnauthorized)
			return
		}
		info, err := g.info.NewRequestInfo(r)
		if err != nil {
			http.Error(w, "Bad request: "+err.Error(), http.StatusBadRequest)
			return
		}
		attrs := authorizer.AttributesRecord{User: resp.User, Verb: info.Verb, Path: info.Path, ResourceRequest: false}
		decision, reason, err := g.authz.Authorize(r.Context(), attrs)
		switch {
		case decision == authorizer.DecisionAllow:
			next.ServeHTTP(w, r)
		case err != nil:
			g.log.Warn("access review failed", "user", resp.User.GetName(), "path", attrs.Path, "error", err)
			http.Error(w, "Internal error: could not check access with the Kubernetes API server", http.StatusInternalServerError)
		default:
			g.log.Debug("access denied", "user", resp.User.GetName(), "verb", attrs.Verb, "path", attrs.Path, "reason", reason)
			http.Error(w, fmt.Sprintf("Forbidden: user %q may not %s %s (bind the ClusterRole ringfire-metrics-reader)",
				resp.User.GetName(), attrs.Verb, attrs.Path), http.StatusForbidden)
		}
	})
}
