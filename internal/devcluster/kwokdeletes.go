package devcluster

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kwokDeletesPolicy names the ValidatingAdmissionPolicy (and its binding) that keeps kwok's
// deletes to the pods it means.
//
// kwok plays a kubelet's last step for a pod being deleted, the delete with grace period 0, by
// name and without the pod's UID as a precondition; a kubelet sends the UID. When that delete
// is played again, or late, after a controller has already made a new pod of the same name (as
// Volcano's controllers do when they restart a Job), it deletes the new pod, and the controller
// makes it once more: a pod created twice that no real node would cause. The policy refuses a
// delete by kwok's user of a pod that is not being deleted, which is the one kwok meant to
// delete gone and a new one in its place.
const kwokDeletesPolicy = "ringfire-e2e-kwok-deletes"

// installKwokDeletesPolicy creates the policy and its binding, before kwok starts.
func (c *Cluster) installKwokDeletesPolicy(ctx context.Context) error {
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: kwokDeletesPolicy},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{
				ResourceRules: []admissionv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionv1.RuleWithOperations{
						Operations: []admissionv1.OperationType{admissionv1.Delete},
						Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
					},
				}},
			},
			MatchConditions: []admissionv1.MatchCondition{{Name: "kwok", Expression: `request.userInfo.username == "kwok"`}},
			Validations: []admissionv1.Validation{{
				Expression: "has(oldObject.metadata.deletionTimestamp)",
				Message:    "kwok deletes only pods being deleted: this one is a new pod of the name of one it deleted",
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: kwokDeletesPolicy},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        kwokDeletesPolicy,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	api := c.clientset.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create policy %s: %w", kwokDeletesPolicy, err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create policy binding %s: %w", kwokDeletesPolicy, err)
	}
	return nil
}
