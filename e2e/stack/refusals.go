package stack

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ringfire/ringfire/deploy"
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

// accessSpec is what a request asks the authorizer (deploy.ParseRequest).
func accessSpec(method, target string) (authorizationv1.SelfSubjectAccessReviewSpec, error) {
	var spec authorizationv1.SelfSubjectAccessReviewSpec
	u, err := url.Parse(target)
	if err != nil {
		return spec, err
	}
	r, err := deploy.ParseRequest(method, u)
	if err != nil {
		return spec, err
	}
	if r.Path != "" {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: r.Path, Verb: r.Verb}
		return spec, nil
	}
	spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
		Namespace: r.Namespace, Verb: r.Verb, Group: r.Group, Version: r.Version,
		Resource: r.Resource, Subresource: r.Subresource, Name: r.Name,
	}
	return spec, nil
}
