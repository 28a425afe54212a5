package kit

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ringfire/ringfire/shard"
)

// Why a reconcile failed for now: the reasons of transient errors, the "reason" label of
// ringfire_transient_errors_total. Each is something waiting cures without anyone changing
// the object: the API server or its network heals, a quota is freed, a stale read is read
// again, a missing object is made, ringfire's own rights or lease come back.
const (
	ReasonThrottled    = "throttled"    // 429: the API server sheds load (APF, max-in-flight)
	ReasonServerError  = "server_error" // 5xx, a failed admission webhook call among them
	ReasonTimeout      = "timeout"      // the server's or the client's deadline passed
	ReasonConnection   = "connection"   // no answer: refused, reset, cut short
	ReasonQuota        = "quota"        // 403 from a ResourceQuota: exceeded, or not yet counted
	ReasonConflict     = "conflict"     // 409: a stale read (or a name still taken); read again
	ReasonNotFound     = "not_found"    // 404: an object the work needs is not there yet
	ReasonUnauthorized = "unauthorized" // 401, 403 by RBAC: ringfire's identity, not the object
	ReasonNotOwner     = "not_owner"    // this replica's lease is in doubt (shard.ErrNotOwner)
)

// TransientReasons lists every reason, for metrics that show each from the start.
var TransientReasons = []string{
	ReasonThrottled, ReasonServerError, ReasonTimeout, ReasonConnection, ReasonQuota,
	ReasonConflict, ReasonNotFound, ReasonUnauthorized, ReasonNotOwner,
}

// IsTransient reports whether err is one that waiting cures (see Classify).
func IsTransient(err error) bool {
	_, transient := Classify(err)
	return transient
}

// Classify tells whether a reconcile's error is transient (retry it for ever, with backoff:
// nothing about the object is wrong) or permanent (the object or what it asks for is refused,
// and asking again cannot change the answer), and for a transient one, why. nil is neither.
//
// Permanent: Invalid, BadRequest and the other 4xx that judge the request itself, a Forbidden
// from admission (PodSecurity, a webhook or policy that denies, a namespace being deleted),
// and any error this function does not know: the unknown keeps Volcano's rule (retry
// MaxRequeue times), so nothing unforeseen is retried for ever.
//
// Transient: throttling, 5xx (the API server answers 500 "failed calling webhook" when a
// webhook with failurePolicy Fail is down), timeouts, connection errors, Conflict (a stale
// read: the next read is fresh), NotFound (a dependency not made yet, or a Job being
// deleted, whose next reconcile sees it gone), Forbidden by a ResourceQuota (quota frees as
// other pods end, or an admin raises it: Kubernetes' own Job and ReplicaSet controllers wait
// on it), and Unauthorized or Forbidden by RBAC. Those last two are about ringfire's
// credentials and ClusterRole, not the user's Job: they come with an upgrade that rolls the
// role out after the replicas, a token rotation or an authentication webhook outage, and
// they hit every Job at once; ending every Job for them would turn one misstep of an admin
// into lost work across the cluster. The metric and the Events show them while they last.
//
// An error joining several (errors.Join, a k8s Aggregate) is transient only if each of them
// is: one pod refused as Invalid makes the whole reconcile's failure permanent.
func Classify(err error) (reason string, transient bool) {
	for err != nil {
		if s, ok := err.(apierrors.APIStatus); ok {
			return classifyStatus(s.Status())
		}
		switch e := err.(type) {
		case interface{ Unwrap() []error }:
			return classifyAll(e.Unwrap())
		case interface{ Errors() []error }: // k8s.io/apimachinery's Aggregate
			return classifyAll(e.Errors())
		case syscall.Errno: // before net.Error, which an Errno also is
			switch e {
			case syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EPIPE, syscall.ETIMEDOUT:
				return ReasonConnection, true
			}
		case net.Error: // *url.Error, *net.OpError: what client-go returns when no answer came
			if e.Timeout() {
				return ReasonTimeout, true
			}
			return ReasonConnection, true
		}
		switch err {
		case context.DeadlineExceeded, context.Canceled:
			// The dispatcher drops what fails as its slot's context ends, before it asks: a
			// context error here is a client-side deadline, or a call cut short for a reason
			// that is not the slot's.
			return ReasonTimeout, true
		case io.EOF, io.ErrUnexpectedEOF:
			return ReasonConnection, true
		case shard.ErrNotOwner:
			return ReasonNotOwner, true
		}
		err = errors.Unwrap(err)
	}
	return "", false
}

// classifyAll is transient with the first error's reason if every error is transient.
func classifyAll(errs []error) (reason string, transient bool) {
	for _, err := range errs {
		if err == nil {
			continue
		}
		r, ok := Classify(err)
		if !ok {
			return "", false
		}
		if reason == "" {
			reason = r
		}
	}
	return reason, reason != ""
}

func classifyStatus(s metav1.Status) (reason string, transient bool) {
	switch s.Reason {
	case metav1.StatusReasonTooManyRequests:
		return ReasonThrottled, true
	case metav1.StatusReasonInternalError, metav1.StatusReasonServiceUnavailable:
		return ReasonServerError, true
	case metav1.StatusReasonServerTimeout, metav1.StatusReasonTimeout:
		return ReasonTimeout, true
	case metav1.StatusReasonConflict, metav1.StatusReasonAlreadyExists,
		metav1.StatusReasonGone, metav1.StatusReasonExpired:
		return ReasonConflict, true
	case metav1.StatusReasonNotFound:
		return ReasonNotFound, true
	case metav1.StatusReasonUnauthorized:
		return ReasonUnauthorized, true
	case metav1.StatusReasonForbidden:
		return classifyForbidden(s.Message)
	case metav1.StatusReasonInvalid, metav1.StatusReasonBadRequest, metav1.StatusReasonMethodNotAllowed,
		metav1.StatusReasonNotAcceptable, metav1.StatusReasonUnsupportedMediaType,
		metav1.StatusReasonRequestEntityTooLarge:
		return "", false
	}
	// No reason the API machinery names (an aggregated API, a proxy in between): the code.
	switch code := int(s.Code); {
	case code == http.StatusTooManyRequests:
		return ReasonThrottled, true
	case code == http.StatusGatewayTimeout:
		return ReasonTimeout, true
	case code >= 500:
		return ReasonServerError, true
	}
	return "", false
}

// classifyForbidden tells a 403 that waiting cures from one that judges the object. The
// API server gives all of them the reason Forbidden; only the message tells them apart, in
// wordings Kubernetes has kept for years: the quota admission plugin's "exceeded quota:" and
// "status unknown for quota:" (the quota controller has not counted the namespace yet), and
// the RBAC authorizer's `User "..." cannot <verb> resource "..."`. Quota's "must specify"
// (a pod without the requests a quota needs) is the pod's fault: permanent.
func classifyForbidden(message string) (reason string, transient bool) {
	switch {
	case strings.Contains(message, "exceeded quota:"), strings.Contains(message, "status unknown for quota:"):
		return ReasonQuota, true
	case strings.Contains(message, "User \"") && strings.Contains(message, " cannot ") &&
		strings.Contains(message, " resource \""):
		return ReasonUnauthorized, true
	}
	return "", false
}
