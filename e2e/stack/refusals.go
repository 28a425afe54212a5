package stack

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// denied returns the refused requests that ringfire's ServiceAccount is denied still, as the
// API server's authorizer answers now: a request refused only because the API server had just
// started (its RBAC caches not yet synced) is allowed by now and left out.
func denied(ctx context.Context, kube kubernetes.Interface, refused []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, r := range refused {
		method, target, _ := strings.Cut(r, " ")
		spec, err := accessSpec(method, target)
		if err != nil {
			return nil, err
		}
		key := spec.String()
		if seen[key] {
			continue
		}
		seen[key] = true
		review, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("access review of %s: %w", r, err)
		}
		if !review.Status.Allowed {
			out = append(out, fmt.Sprintf("%s (%s)", r, key))
		}
	}
	return out, nil
}

// accessSpec is what a request asks the authorizer: for a resource path
// (/api/v1[/namespaces/NS]/RESOURCE[/NAME[/SUB]], /apis/GROUP/VERSION/... likewise) its verb
// and resource, for any other path (/readyz) the path.
func accessSpec(method, target string) (authorizationv1.SelfSubjectAccessReviewSpec, error) {
	var spec authorizationv1.SelfSubjectAccessReviewSpec
	u, err := url.Parse(target)
	if err != nil {
		return spec, err
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	a := &authorizationv1.ResourceAttributes{}
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		a.Version, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		a.Group, a.Version, parts = parts[1], parts[2], parts[3:]
	default:
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: u.Path, Verb: strings.ToLower(method)}
		return spec, nil
	}
	spec.ResourceAttributes = a
	if len(parts) >= 3 && parts[0] == "namespaces" {
		a.Namespace, parts = parts[1], parts[2:]
	}
	a.Resource = parts[0]
	if len(parts) > 1 {
		a.Name = parts[1]
	}
	if len(parts) > 2 {
		a.Subresource = parts[2]
	}
	switch method {
	case http.MethodGet:
		a.Verb = "get"
		if a.Name == "" {
			a.Verb = "list"
			if u.Query().Get("watch") == "true" {
				a.Verb = "watch"
			}
		}
	case http.MethodPost:
		a.Verb = "create"
	case http.MethodPut:
		a.Verb = "update"
	case http.MethodPatch:
		a.Verb = "patch"
	case http.MethodDelete:
		a.Verb = "delete"
		if a.Name == "" {
			a.Verb = "deletecollection"
		}
	default:
		return spec, fmt.Errorf("method %s of %s", method, target)
	}
	return spec, nil
}
