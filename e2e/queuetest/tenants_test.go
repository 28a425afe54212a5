package queuetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// The tenants: tenant may create Commands in its own namespace and nothing else, as Volcano's
// vcjob-editor role lets it; steerer may also update the queue "guarded".
const (
	tenantNS    = "tenant-a"
	otherNS     = "tenant-b"
	tenant      = "tenant"
	steerer     = "steerer"
	guardedName = "guarded"
)

// tenants: a user who may create Commands in its own namespace cannot close or open a Queue
// (the API server refuses the Command and says who lacks what), nor reach a Job of another
// namespace (its Command names a Job of its own namespace, which the Job controller looks up
// there); a user who may update the Queue closes it as before.
func tenants(t *testing.T, s *stack.Stack) {
	ctx := context.Background()
	createQueue(t, s, guardedName)
	guarded := waitOpen(t, s, guardedName)
	tenantVC, steererVC := tenantClients(t, s, guarded)
	defaultQueue, err := s.Volcano.SchedulingV1beta1().Queues().Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// (a) Closing the default queue is refused at once, with who, what and what is lacking.
	_, err = tenantVC.BusV1alpha1().Commands(tenantNS).Create(ctx, queueCommand(tenantNS, defaultQueue, bus.CloseQueueAction), metav1.CreateOptions{})
	checkRefused(t, err, "Command CloseQueue on queue default refused: user tenant may not update queue default "+
		"(verb update on queues.scheduling.volcano.sh)")

	// (d) The steerer closes the guarded queue, within seconds as ever.
	start := time.Now()
	cmd, err := steererVC.BusV1alpha1().Commands(tenantNS).Create(ctx, queueCommand(tenantNS, guarded, bus.CloseQueueAction), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the steerer's CloseQueue is refused: %v", err)
	}
	waitState(t, s, guardedName, scheduling.QueueStateClosed)
	t.Logf("the steerer's CloseQueue closed %s in %v", guardedName, time.Since(start).Round(time.Millisecond))
	stack.WaitFor(t, "the steerer's Command taken", 10*time.Second, func() (bool, string) {
		_, err := s.Volcano.BusV1alpha1().Commands(tenantNS).Get(ctx, cmd.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})

	// (b) Opening it again is refused to the tenant, and it stays Closed.
	_, err = tenantVC.BusV1alpha1().Commands(tenantNS).Create(ctx, queueCommand(tenantNS, guarded, bus.OpenQueueAction), metav1.CreateOptions{})
	checkRefused(t, err, "Command OpenQueue on queue guarded refused: user tenant may not update queue guarded")
	if st := queueStatus(s, guardedName); st.State != scheduling.QueueStateClosed {
		t.Errorf("queue %s is %s after the tenant's refused OpenQueue", guardedName, st.State)
	}

	// (c) A Command in the tenant's namespace naming a Job of another namespace is taken as one
	// for a Job of its own namespace, where there is none: the other Job runs on untouched.
	victim := vcjob.Create(t, s.Volcano, vcjob.New(otherNS, "victim", vcjob.Task("w", 1, "10m", "")))
	t.Cleanup(func() {
		_ = s.Volcano.BatchV1alpha1().Jobs(otherNS).Delete(context.Background(), victim.Name, metav1.DeleteOptions{})
	})
	before := s.WaitPhase(otherNS, victim.Name, 30*time.Second, batch.Running)
	abort := &bus.Command{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, GenerateName: "victim-abortjob-"},
		Action:     string(bus.AbortJobAction),
		TargetObject: &metav1.OwnerReference{
			APIVersion: batch.SchemeGroupVersion.String(), Kind: "Job", Name: victim.Name, UID: victim.UID,
		},
	}
	abort, err = tenantVC.BusV1alpha1().Commands(tenantNS).Create(ctx, abort, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the tenant's AbortJob Command in its own namespace is refused: %v", err)
	}
	stack.WaitFor(t, "the AbortJob Command taken", 10*time.Second, func() (bool, string) {
		_, err := s.Volcano.BusV1alpha1().Commands(tenantNS).Get(ctx, abort.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	time.Sleep(time.Second) // what an applied abort would have written by now
	after, err := s.Volcano.BatchV1alpha1().Jobs(otherNS).Get(ctx, victim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Status.State.Phase != batch.Running || after.Status.Version != before.Status.Version ||
		after.Status.RetryCount != before.Status.RetryCount || after.Status.Running != before.Status.Running {
		t.Errorf("the Job in %s changed after a Command in %s named it: before %+v, after %+v",
			otherNS, tenantNS, before.Status, after.Status)
	}
}

// tenantClients sets up the two users of the case (namespaces, roles, bindings) and returns
// their clients: the admin impersonates them.
func tenantClients(t *testing.T, s *stack.Stack, guarded *scheduling.Queue) (tenantVC, steererVC vcclient.Interface) {
	t.Helper()
	ctx := context.Background()
	for _, n := range []string{tenantNS, otherNS} {
		if _, err := s.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rbac := s.Kube.RbacV1()
	users := []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: tenant}, {Kind: rbacv1.UserKind, Name: steerer}}
	_, err := rbac.Roles(tenantNS).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "commands"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{bus.GroupName}, Resources: []string{"commands"}, Verbs: []string{"create", "get", "list"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = rbac.RoleBindings(tenantNS).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "commands"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "commands"},
		Subjects:   users,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "queuetest-steer-guarded"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{scheduling.GroupName}, Resources: []string{"queues"},
			ResourceNames: []string{guardedName}, Verbs: []string{"update"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "queuetest-steer-guarded"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "queuetest-steer-guarded"},
		Subjects:   users[1:],
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	as := func(user string) vcclient.Interface {
		cfg := rest.CopyConfig(s.Cluster.RESTConfig())
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		return vcclient.NewForConfigOrDie(cfg)
	}
	tenantVC, steererVC = as(tenant), as(steerer)
	// The authorizer learns of new bindings a moment after they are written.
	stack.WaitFor(t, "the tenant's role in force", 10*time.Second, func() (bool, string) {
		_, err := tenantVC.BusV1alpha1().Commands(tenantNS).List(ctx, metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})
	stack.WaitFor(t, "the steerer's roles in force", 10*time.Second, func() (bool, string) {
		_, err := steererVC.BusV1alpha1().Commands(tenantNS).Create(ctx, queueCommand(tenantNS, guarded, bus.CloseQueueAction),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil, fmt.Sprint(err)
	})
	return tenantVC, steererVC
}

// waitOpen waits until the queue is Open and returns it.
func waitOpen(t *testing.T, s *stack.Stack, name string) *scheduling.Queue {
	t.Helper()
	waitState(t, s, name, scheduling.QueueStateOpen)
	q, err := s.Volcano.SchedulingV1beta1().Queues().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// checkRefused fails the test unless err is the API server's Forbidden carrying want.
func checkRefused(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("accepted; want refused with %q", want)
	case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want):
		t.Errorf("got %v; want Forbidden with %q", err, want)
	default:
		t.Logf("refused: %v", err)
	}
}
