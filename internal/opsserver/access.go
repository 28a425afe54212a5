package opsserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
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
	utilnet "k8s.io/apimachinery/pkg/util/net"
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

// A review that failed for a reason that may pass is made reviewAttempts
// times in all, waiting reviewBackoff, then 1.5 times as long each time
// (with a fifth of jitter), as the API server's own delegating options do;
// all of them within reviewTimeout.
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
	r, err := newReviewer(client)
	if err != nil {
		return nil, err
	}
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
			r.Header.Del("Authorization") // the token is the guard's, not the handler's
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

// bearerToken is the token of the request's "Authorization: Bearer <token>"
// header, or "": the scheme and the token are separated by exactly one space,
// and the token ends at the next space, as the API server reads the header.
func bearerToken(r *http.Request) string {
	parts := strings.SplitN(strings.TrimSpace(r.Header.Get("Authorization")), " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") {
		return ""
	}
	return parts[1]
}

// reviewer asks the API server, and keeps its answers for their TTLs.
type reviewer struct {
	client kubernetes.Interface
	secret []byte                 // keys the tokens' cache: a memory dump cannot test guesses against it
	tokens *answers[tokenAnswer]  // by an HMAC-SHA-256 of the token
	access *answers[accessAnswer] // by a SHA-256 of the question
}

func newReviewer(client kubernetes.Interface) (*reviewer, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("token cache key: %w", err)
	}
	return &reviewer{client: client, secret: secret, tokens: newAnswers[tokenAnswer](), access: newAnswers[accessAnswer]()}, nil
}

type tokenAnswer struct {
	who     caller
	ok      bool
	refusal string // the API server's error for a token it did not accept
}

type accessAnswer struct {
	allowed bool
	reason  string
}

// authenticate asks a TokenReview of token, unless one was answered within
// tokenCacheTTL. An empty token is not asked about. A token the API server
// does not accept is remembered as long as one it does, unless it said why
// (an error of its own); a review that could not be made is not remembered.
func (r *reviewer) authenticate(ctx context.Context, token string) (caller, bool, error) {
	if token == "" {
		return caller{}, false, nil
	}
	mac := hmac.New(sha256.New, r.secret)
	mac.Write([]byte(token))
	var key [sha256.Size]byte
	mac.Sum(key[:0])
	a, err := r.tokens.lookup(ctx, key, func(ctx context.Context) (tokenAnswer, time.Duration, error) {
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
			return tokenAnswer{}, 0, fmt.Errorf("token review: %w", err)
		}
		if !status.Authenticated {
			if status.Error != "" {
				return tokenAnswer{refusal: status.Error}, 0, nil
			}
			return tokenAnswer{}, tokenCacheTTL, nil
		}
		return tokenAnswer{who: callerOf(status.User), ok: true}, tokenCacheTTL, nil
	})
	switch {
	case err != nil:
		return caller{}, false, err
	case a.refusal != "":
		return caller{}, false, errors.New(a.refusal)
	}
	return a.who, a.ok, nil
}

// callerOf is the user a TokenReview names, in the group of every
// authenticated user, as the API server's authenticators add it.
func callerOf(u authenticationv1.UserInfo) caller {
	who := caller{name: u.Username, uid: u.UID, groups: slices.Clone(u.Groups)}
	if u.Username != "system:anonymous" && !slices.Contains(who.groups, "system:authenticated") {
		who.groups = append(who.groups, "system:authenticated")
	}
	if len(u.Extra) > 0 {
		who.extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			who.extra[k] = slices.Clone(v)
		}
	}
	return who
}

// authorize asks a SubjectAccessReview of who doing verb on the non-resource
// URL path, unless one was answered within its TTL (allowedCacheTTL or
// deniedCacheTTL). A review that could not be made is not remembered.
func (r *reviewer) authorize(ctx context.Context, who caller, verb, path string) (bool, string, error) {
	a, err := r.access.lookup(ctx, accessKey(who, verb, path), func(ctx context.Context) (accessAnswer, time.Duration, error) {
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
			return accessAnswer{}, 0, fmt.Errorf("subject access review: %w", err)
		}
		reason := status.Reason
		if status.EvaluationError != "" {
			reason = strings.TrimSpace(reason + " (evaluation error: " + status.EvaluationError + ")")
		}
		if status.Allowed && !status.Denied {
			return accessAnswer{allowed: true}, allowedCacheTTL, nil
		}
		return accessAnswer{reason: reason}, deniedCacheTTL, nil
	})
	return a.allowed, a.reason, err
}

// accessKey is the cache key of one access question: a SHA-256 of every
// field of it, encoded as JSON (whose strings are quoted and whose maps are
// sorted by key), so that no two questions share a key.
func accessKey(who caller, verb, path string) [sha256.Size]byte {
	b, _ := json.Marshal(struct { // strings, slices and maps of strings always encode
		Name, UID, Verb, Path string
		Groups                []string
		Extra                 map[string][]string
	}{who.name, who.uid, verb, path, who.groups, who.extra})
	return sha256.Sum256(b)
}

// retryReview makes a review, all attempts together bounded by
// reviewTimeout, again after a backoff while it fails for a reason that may
// pass (transient).
func retryReview(ctx context.Context, review func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	wait := reviewBackoff
	for attempt := 1; ; attempt++ {
		err := review(ctx)
		if err == nil || attempt == reviewAttempts || !transient(err) {
			return err
		}
		jittered := wait + time.Duration(mathrand.Int64N(int64(wait)/5+1))
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(jittered):
		}
		wait = wait * 3 / 2
	}
}

// transient reports whether a review that failed with err may succeed if
// made again: the API server busy, failing or timing out, or the connection
// to it lost, as the API server's own webhook clients judge it.
func transient(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		utilnet.IsConnectionReset(err) || utilnet.IsHTTP2ConnectionLost(err)
}

// answers is a cache of the API server's answers, each kept until its TTL
// has passed, at most reviewCacheSize of them: a new answer past that
// replaces the expired ones, or, when none is, any one. One question is
// asked once at a time: callers that want the same answer meanwhile wait
// for it.
type answers[T any] struct {
	now func() time.Time

	mu      sync.Mutex
	keep    map[[sha256.Size]byte]answer[T]
	pending map[[sha256.Size]byte]*asking[T]
}

type answer[T any] struct {
	value   T
	expires time.Time
}

// asking is a question on its way to the API server; done is closed once
// value and err are set.
type asking[T any] struct {
	done  chan struct{}
	value T
	err   error
}

func newAnswers[T any]() *answers[T] {
	return &answers[T]{now: time.Now, keep: map[[sha256.Size]byte]answer[T]{}, pending: map[[sha256.Size]byte]*asking[T]{}}
}

// lookup returns the answer kept for key if it has not expired; else the
// answer of ask, kept for the TTL ask returns with it (0: not kept). ask
// runs without the caller's cancellation (others may wait for its answer;
// retryReview bounds it), and a caller that gives up waiting gets its
// context's error.
func (c *answers[T]) lookup(ctx context.Context, key [sha256.Size]byte, ask func(context.Context) (T, time.Duration, error)) (T, error) {
	c.mu.Lock()
	if a, ok := c.keep[key]; ok && c.now().Before(a.expires) {
		c.mu.Unlock()
		return a.value, nil
	}
	if q, ok := c.pending[key]; ok {
		c.mu.Unlock()
		select {
		case <-q.done:
			return q.value, q.err
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
	}
	q := &asking[T]{done: make(chan struct{})}
	c.pending[key] = q
	c.mu.Unlock()

	var ttl time.Duration
	q.value, ttl, q.err = ask(context.WithoutCancel(ctx))
	c.mu.Lock()
	delete(c.pending, key)
	if q.err == nil && ttl > 0 {
		c.putLocked(key, q.value, ttl)
	}
	c.mu.Unlock()
	close(q.done)
	return q.value, q.err
}

// putLocked keeps value for key for ttl; c.mu is held.
func (c *answers[T]) putLocked(key [sha256.Size]byte, value T, ttl time.Duration) {
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
