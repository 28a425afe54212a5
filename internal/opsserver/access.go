package opsserver

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// reviewCacheSize bounds each cache of answers: callers choose the tokens
// and paths they send, and the memory they cost must not be theirs to
// choose. Past it, an answer is simply asked again.
const reviewCacheSize = 1024

// A review that failed is tried again reviewAttempts times in all, waiting
// reviewBackoff, then 1.5 times as long each time (with a fifth of jitter),
// as the API server's own delegating options do.
const (
	reviewAttempts = 5
	reviewBackoff  = 500 * time.Millisecond
)

// caller is who the API server says a token belongs to.
type caller struct {
	name, uid string
	groups    []string
	extra     map[string][]string
}

// accessGuard lets in only the requests whose bearer token the API server
// accepts (a TokenReview) and whose user it allows to get the path (a
// SubjectAccessReview on the non-resource URL), as kube-controller-manager
// guards its /metrics. authenticate and authorize are the two questions;
// newAccessGuard asks them of the API server, with their answers cached.
type accessGuard struct {
	// authenticate reports who token belongs to; ok is false for a token the
	// API server does not accept.
	authenticate func(ctx context.Context, token string) (who caller, ok bool, err error)
	// authorize reports whether who may verb path, and why not.
	authorize func(ctx context.Context, who caller, verb, path string) (allowed bool, reason string, err error)
	log       hclog.Logger
}

// newAccessGuard builds a guard that asks the API server kube reaches.
func newAccessGuard(kube *rest.Config, log hclog.Logger) (*accessGuard, error) {
	client, err := kubernetes.NewForConfig(kube)
	if err != nil {
		return nil, fmt.Errorf("client for token and access reviews: %w", err)
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	r := &reviewer{client: client, tokens: newAnswers[tokenAnswer](), access: newAnswers[accessAnswer]()}
	return &accessGuard{authenticate: r.authenticate, authorize: r.authorize, log: log.Named("access")}, nil
}

// wrap serves next to the requests the API server lets in: 401 without a
// valid token, 403 for a user not allowed the path, 500 when the API
// server could not be asked.
func (g *accessGuard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who, ok, err := g.authenticate(r.Context(), bearerToken(r))
		if err != nil || !ok {
			if err != nil {
				g.log.Debug("authentication failed", "path", r.URL.Path, "remote", r.RemoteAddr, "error", err)
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="ringfire"`)
			http.Error(w, "Unauthorized: send a bearer token the Kubernetes API server accepts (a ServiceAccount's token)", http.StatusUnauthorized)
			return
		}
		// Every path here is a non-resource URL, whose verb is the HTTP
		// method's, lower case (get for GET).
		verb, path := strings.ToLower(r.Method), r.URL.Path
		allowed, reason, err := g.authorize(r.Context(), who, verb, path)
		switch {
		case allowed:
			next.ServeHTTP(w, r)
		case err != nil:
			g.log.Warn("access review failed", "user", who.name, "path", path, "error", err)
			http.Error(w, "Internal error: could not check access with the Kubernetes API server", http.StatusInternalServerError)
		default:
			g.log.Debug("access denied", "user", who.name, "verb", verb, "path", path, "reason", reason)
			http.Error(w, fmt.Sprintf("Forbidden: user %q may not %s %s (bind the ClusterRole ringfire-metrics-reader)",
				who.name, verb, path), http.StatusForbidden)
		}
	})
}

// bearerToken is the token of the request's "Authorization: Bearer" header,
// or "".
func bearerToken(r *http.Request) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// reviewer asks the API server, and keeps its answers for their TTLs.
type reviewer struct {
	client kubernetes.Interface
	tokens *answers[tokenAnswer]  // by the SHA-256 of the token
	access *answers[accessAnswer] // by the SHA-256 of the caller, verb and path
}

type tokenAnswer struct {
	who caller
	ok  bool
}

type accessAnswer struct {
	allowed bool
	reason  string
}

// authenticate asks a TokenReview of token, unless one was answered within
// tokenCacheTTL. An empty token is not asked about. A token the API server
// does not accept is remembered as long as one it does; a review that could
// not be made is not remembered.
func (r *reviewer) authenticate(ctx context.Context, token string) (caller, bool, error) {
	if token == "" {
		return caller{}, false, nil
	}
	key := sha256.Sum256([]byte(token))
	if a, ok := r.tokens.get(key); ok {
		return a.who, a.ok, nil
	}
	var status authenticationv1.TokenReviewStatus
	err := retryReview(ctx, func(ctx context.Context) error {
		review, err := r.client.AuthenticationV1().TokenReviews().Create(ctx,
			&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		if err == nil {
			status = review.Status
		}
		return err
	})
	if err != nil {
		return caller{}, false, fmt.Errorf("token review: %w", err)
	}
	a := tokenAnswer{ok: status.Authenticated}
	if a.ok {
		u := status.User
		a.who = caller{name: u.Username, uid: u.UID, groups: u.Groups}
		if len(u.Extra) > 0 {
			a.who.extra = make(map[string][]string, len(u.Extra))
			for k, v := range u.Extra {
				a.who.extra[k] = v
			}
		}
	}
	r.tokens.put(key, a, tokenCacheTTL)
	if !a.ok && status.Error != "" {
		return caller{}, false, errors.New(status.Error)
	}
	return a.who, a.ok, nil
}

// authorize asks a SubjectAccessReview of who doing verb on the non-resource
// URL path, unless one was answered within its TTL (allowedCacheTTL or
// deniedCacheTTL). A review that could not be made is not remembered.
func (r *reviewer) authorize(ctx context.Context, who caller, verb, path string) (bool, string, error) {
	key := accessKey(who, verb, path)
	if a, ok := r.access.get(key); ok {
		return a.allowed, a.reason, nil
	}
	spec := authorizationv1.SubjectAccessReviewSpec{
		User: who.name, UID: who.uid, Groups: who.groups,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}
	if len(who.extra) > 0 {
		spec.Extra = make(map[string]authorizationv1.ExtraValue, len(who.extra))
		for k, v := range who.extra {
			spec.Extra[k] = v
		}
	}
	var status authorizationv1.SubjectAccessReviewStatus
	err := retryReview(ctx, func(ctx context.Context) error {
		review, err := r.client.AuthorizationV1().SubjectAccessReviews().Create(ctx,
			&authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		if err == nil {
			status = review.Status
		}
		return err
	})
	if err != nil {
		return false, "", fmt.Errorf("subject access review: %w", err)
	}
	a := accessAnswer{allowed: status.Allowed && !status.Denied, reason: status.Reason}
	ttl := deniedCacheTTL
	if a.allowed {
		ttl = allowedCacheTTL
	}
	r.access.put(key, a, ttl)
	return a.allowed, a.reason, nil
}

// accessKey is the cache key of one access question: every field of it,
// each length-prefixed so that no two questions share a key.
func accessKey(who caller, verb, path string) [sha256.Size]byte {
	h := sha256.New()
	field := func(s string) { fmt.Fprintf(h, "%d:%s", len(s), s) }
	field(who.name)
	field(who.uid)
	field(verb)
	field(path)
	fmt.Fprintf(h, "g%d", len(who.groups))
	for _, g := range who.groups {
		field(g)
	}
	keys := make([]string, 0, len(who.extra))
	for k := range who.extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	fmt.Fprintf(h, "e%d", len(keys))
	for _, k := range keys {
		field(k)
		fmt.Fprintf(h, "v%d", len(who.extra[k]))
		for _, v := range who.extra[k] {
			field(v)
		}
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// retryReview makes a review, each attempt bounded by reviewTimeout, again
// after a backoff while it fails for a reason that may pass (the API server
// or the way to it); an answer that will not change (ringfire not allowed to
// make reviews, a review the API server refuses) is returned at once.
func retryReview(ctx context.Context, review func(context.Context) error) error {
	wait := reviewBackoff
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, reviewTimeout)
		err := review(actx)
		cancel()
		if err == nil || attempt == reviewAttempts || !transient(err) {
			return err
		}
		jittered := wait + time.Duration(rand.Int64N(int64(wait)/5+1))
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(jittered):
		}
		wait = wait * 3 / 2
	}
}

// transient reports whether a review that failed with err may succeed if
// made again.
func transient(err error) bool {
	switch {
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err), apierrors.IsBadRequest(err),
		apierrors.IsInvalid(err), apierrors.IsNotFound(err), apierrors.IsMethodNotSupported(err):
		return false
	}
	return true
}

// answers is a cache of the API server's answers, each kept until its TTL
// has passed, at most reviewCacheSize of them: a new answer past that
// replaces the expired ones, or, when none is, any one.
type answers[T any] struct {
	now func() time.Time

	mu   sync.Mutex
	keep map[[sha256.Size]byte]answer[T]
}

type answer[T any] struct {
	value   T
	expires time.Time
}

func newAnswers[T any]() *answers[T] {
	return &answers[T]{now: time.Now, keep: map[[sha256.Size]byte]answer[T]{}}
}

// get returns the answer kept for key, if it has not expired.
func (c *answers[T]) get(key [sha256.Size]byte) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.keep[key]
	if !ok || !c.now().Before(a.expires) {
		var zero T
		return zero, false
	}
	return a.value, true
}

// put keeps value for key for ttl.
func (c *answers[T]) put(key [sha256.Size]byte, value T, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if _, ok := c.keep[key]; !ok && len(c.keep) >= reviewCacheSize {
		for k, a := range c.keep {
			if !now.Before(a.expires) {
				delete(c.keep, k)
			}
		}
		for k := range c.keep {
			if len(c.keep) < reviewCacheSize {
				break
			}
			delete(c.keep, k) // map order: an arbitrary one
		}
	}
	c.keep[key] = answer[T]{value: value, expires: now.Add(ttl)}
}
