package kit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ringfire/ringfire/shard"
)

// The errors are built as the API server and client-go build them (apierrors' constructors,
// the messages of the quota plugin, the RBAC authorizer, PodSecurity and the webhook
// dispatcher), so that the table checks the wordings Classify relies on.
func TestClassify(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	quota := apierrors.NewForbidden(pods, "w-0",
		errors.New("exceeded quota: zero, requested: pods=1, used: pods=0, limited: pods=0"))
	webhookDown := apierrors.NewInternalError(errors.New(`failed calling webhook "deny.ringfire.test": ` +
		`failed to call webhook: Post "https://127.0.0.1:9/validate?timeout=5s": dial tcp 127.0.0.1:9: connect: connection refused`))
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "w-0",
		field.ErrorList{field.Required(field.NewPath("spec", "containers"), "")})
	refused := &url.Error{Op: "Post", URL: "https://127.0.0.1:6443/api/v1/namespaces/a/pods",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}

	for _, tc := range []struct {
		name      string
		err       error
		reason    string // "" for a permanent error
		transient bool
	}{
		{"nil", nil, "", false},
		// Transient: waiting cures them.
		{"throttled", apierrors.NewTooManyRequests("the server is busy", 1), ReasonThrottled, true},
		{"throttled by APF", apierrors.NewTooManyRequestsError("too many requests"), ReasonThrottled, true},
		{"internal error", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), ReasonServerError, true},
		{"webhook down", webhookDown, ReasonServerError, true},
		{"unavailable", apierrors.NewServiceUnavailable("try later"), ReasonServerError, true},
		{"bare 502", apierrors.NewGenericServerResponse(502, "POST", pods, "", "bad gateway", 0, false), ReasonServerError, true},
		{"server timeout", apierrors.NewServerTimeout(pods, "create", 1), ReasonTimeout, true},
		{"timeout", apierrors.NewTimeoutError("request did not complete within 60s", 1), ReasonTimeout, true},
		{"gateway timeout", apierrors.NewGenericServerResponse(504, "POST", pods, "", "", 0, false), ReasonTimeout, true},
		{"quota", quota, ReasonQuota, true},
		{"quota not counted yet", apierrors.NewForbidden(pods, "w-0", errors.New("status unknown for quota: zero, resources: pods")), ReasonQuota, true},
		{"conflict", apierrors.NewConflict(schema.GroupResource{Group: "batch.volcano.sh", Resource: "jobs"}, "j",
			errors.New("the object has been modified; please apply your changes to the latest version and try again")), ReasonConflict, true},
		{"already exists", apierrors.NewAlreadyExists(pods, "w-0"), ReasonConflict, true},
		{"gone", apierrors.NewResourceExpired("too old resource version"), ReasonConflict, true},
		{"not found", apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "cfg"), ReasonNotFound, true},
		{"unauthorized", apierrors.NewUnauthorized("Unauthorized"), ReasonUnauthorized, true},
		{"forbidden by RBAC", apierrors.NewForbidden(pods, "", errors.New(`User "system:serviceaccount:ringfire:ringfire" `+
			`cannot create resource "pods" in API group "" in the namespace "a"`)), ReasonUnauthorized, true},
		{"connection refused", refused, ReasonConnection, true},
		{"client timeout", &url.Error{Op: "Post", URL: "https://127.0.0.1:6443", Err: context.DeadlineExceeded}, ReasonTimeout, true},
		{"deadline", fmt.Errorf("create pod w-0: %w", context.DeadlineExceeded), ReasonTimeout, true},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), ReasonConnection, true},
		{"eof", fmt.Errorf("read: %w", io.EOF), ReasonConnection, true},
		{"unexpected eof", fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), ReasonConnection, true},
		{"lease in doubt", fmt.Errorf("create pod w-0: %w", shard.ErrNotOwner), ReasonNotOwner, true},
		{"wrapped quota", fmt.Errorf("create pod w-0: %w", quota), ReasonQuota, true},
		{"joined transient", errors.Join(fmt.Errorf("create pod w-0: %w", quota), fmt.Errorf("create pod w-1: %w", webhookDown)), ReasonQuota, true},
		{"aggregate transient", utilerrors.NewAggregate([]error{webhookDown, quota}), ReasonServerError, true},
		// Permanent: the request itself is refused; asking again gets the same answer.
		{"invalid", invalid, "", false},
		{"bad request", apierrors.NewBadRequest("json: cannot unmarshal"), "", false},
		{"too large", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), "", false},
		{"method", apierrors.NewMethodNotSupported(pods, "patch"), "", false},
		{"quota needs requests", apierrors.NewForbidden(pods, "w-0", errors.New("failed quota: zero: must specify cpu for: w")), "", false},
		{"pod security", apierrors.NewForbidden(pods, "w-0", errors.New(`violates PodSecurity "restricted:latest": privileged`)), "", false},
		{"webhook denies", apierrors.NewForbidden(pods, "w-0", errors.New(`admission webhook "deny.ringfire.test" denied the request: no`)), "", false},
		{"namespace terminating", apierrors.NewForbidden(pods, "w-0",
			errors.New("unable to create new content in namespace a because it is being terminated")), "", false},
		{"joined with an invalid", errors.Join(quota, fmt.Errorf("create pod w-1: %w", invalid)), "", false},
		{"unknown", errors.New(`plugin "tensorflow": no task named ps`), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, transient := Classify(tc.err)
			if reason != tc.reason || transient != tc.transient {
				t.Errorf("Classify(%v) = %q, %v; want %q, %v", tc.err, reason, transient, tc.reason, tc.transient)
			}
			if IsTransient(tc.err) != tc.transient {
				t.Errorf("IsTransient disagrees with Classify")
			}
		})
	}
}
