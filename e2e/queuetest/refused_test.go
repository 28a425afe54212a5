package queuetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/e2e/stack"
)

// refuseLabel on a queue makes the API server refuse every write of its status with refusal
// (refuseStatus).
const (
	refuseLabel = "ringfire.test/refuse-status"
	refusal     = "the test refuses status writes of this queue"
)

// closeAfterRefusal: a replica takes a CloseQueue Command (deletes it), and then the API server
// refuses its write of the queue's status. The Command is gone from the cluster by then, but
// the action is still owed: once writes are let through again, the queue must close.
func closeAfterRefusal(t *testing.T, s *stack.Stack) {
	ctx := context.Background()
	const name, policy = "refused", "ringfire-e2e-refuse-queue-status"
	createQueue(t, s, name)
	waitState(t, s, name, scheduling.QueueStateOpen)
	refuseStatus(t, s, policy)
	labelQueue(t, s, name, `{"metadata":{"labels":{"`+refuseLabel+`":"true"}}}`)
	queues := s.Volcano.SchedulingV1beta1().Queues()
	stack.WaitFor(t, "the policy in force", 30*time.Second, func() (bool, string) {
		q, err := queues.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, err = queues.UpdateStatus(ctx, q, metav1.UpdateOptions{}) // unchanged: admission judges it all the same
		return err != nil && strings.Contains(err.Error(), refusal), fmt.Sprint(err)
	})
	before := denials(t, s, policy)

	cmd := command(t, s, name, bus.CloseQueueAction)
	stack.WaitFor(t, "the Command taken and the replica's status write refused", 30*time.Second, func() (bool, string) {
		gone, refused := commandGone(s, cmd), denials(t, s, policy)
		return gone && refused > before, fmt.Sprintf("command gone %v, refusals %d (before the Command %d)", gone, refused, before)
	})
	if st := queueStatus(s, name); st.State != scheduling.QueueStateOpen {
		t.Fatalf("queue %s while its status writes are refused: %+v", name, st)
	}

	labelQueue(t, s, name, `{"metadata":{"labels":{"`+refuseLabel+`":null}}}`)
	waitState(t, s, name, scheduling.QueueStateClosed)
	waitEvents(t, s, name, "CloseQueue: Close queue succeed")
}

// refuseStatus installs, for the test's life, a ValidatingAdmissionPolicy named policy that
// refuses status writes of queues labelled refuseLabel.
func refuseStatus(t *testing.T, s *stack.Stack, policy string) {
	t.Helper()
	ctx := context.Background()
	fail := admissionv1.Fail
	api := s.Kube.AdmissionregistrationV1()
	_, err := api.ValidatingAdmissionPolicies().Create(ctx, &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policy},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{
				ResourceRules: []admissionv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionv1.RuleWithOperations{
						Operations: []admissionv1.OperationType{admissionv1.Update},
						Rule: admissionv1.Rule{APIGroups: []string{scheduling.GroupName}, APIVersions: []string{"*"},
							Resources: []string{"queues/status"}},
					},
				}},
			},
			Validations: []admissionv1.Validation{{
				Expression: `!has(object.metadata.labels) || !('` + refuseLabel + `' in object.metadata.labels)`,
				Message:    refusal,
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create policy %s: %v", policy, err)
	}
	_, err = api.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: policy, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create policy binding %s: %v", policy, err)
	}
	t.Cleanup(func() {
		if err := api.ValidatingAdmissionPolicyBindings().Delete(context.Background(), policy, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete policy binding %s: %v", policy, err)
		}
		if err := api.ValidatingAdmissionPolicies().Delete(context.Background(), policy, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete policy %s: %v", policy, err)
		}
	})
}

func labelQueue(t *testing.T, s *stack.Stack, name, patch string) {
	t.Helper()
	_, err := s.Volcano.SchedulingV1beta1().Queues().Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patch queue %s with %s: %v", name, patch, err)
	}
}

// denials counts the requests the API server refused by policy, from its own metrics.
func denials(t *testing.T, s *stack.Stack, policy string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body, err := s.Cluster.APIServerMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := procs.MetricValue(body, "apiserver_validating_admission_policy_check_total",
		`policy="`+policy+`"`, `enforcement_action="deny"`)
	return int(n)
}
