package crds_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	busv1alpha1 "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	"volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/controllers/queue"
)

// queueCommands: ringfire-queue-command accepts a Command that targets a Queue only from a user
// who may update that Queue, and matches exactly the Commands the Queue controller acts on
// (queue.TargetsQueue); a Command for a Job, or an update that keeps the target, is not checked.
func queueCommands(ctx context.Context, t *testing.T, kube kubernetes.Interface, admin *rest.Config) {
	// tenant may create and update Commands in the namespace, as Volcano's vcjob-editor role
	// lets it; steerer may also update the queue "steerable".
	grantCommands(ctx, t, kube, "tenant", "steerer")
	as := func(user string) versioned.Interface {
		cfg := rest.CopyConfig(admin)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		return versioned.NewForConfigOrDie(cfg)
	}
	users := map[string]versioned.Interface{"tenant": as("tenant"), "steerer": as("steerer"), "admin": versioned.NewForConfigOrDie(admin)}
	create := func(user string, ref *metav1.OwnerReference, action busv1alpha1.Action) error {
		cmd := &busv1alpha1.Command{ObjectMeta: metav1.ObjectMeta{GenerateName: "c-"}, Action: string(action), TargetObject: ref}
		_, err := users[user].BusV1alpha1().Commands(namespace).Create(ctx, cmd, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	v1beta1 := "scheduling.volcano.sh/v1beta1"
	queueRef := func(apiVersion, name string) *metav1.OwnerReference {
		return &metav1.OwnerReference{APIVersion: apiVersion, Kind: "Queue", Name: name, UID: "u"}
	}
	jobRef := &metav1.OwnerReference{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "j", UID: "u"}
	// The authorizer learns of new bindings a moment after they are written.
	waitAccepted(t, "the tenant's role", func() error { return create("tenant", jobRef, busv1alpha1.AbortJobAction) })
	waitAccepted(t, "the steerer's roles", func() error {
		return create("steerer", queueRef(v1beta1, "steerable"), busv1alpha1.CloseQueueAction)
	})

	for _, r := range []struct {
		name   string
		user   string
		ref    *metav1.OwnerReference
		action busv1alpha1.Action
		want   string // part of the refusal; "" to be accepted
	}{
		{"tenant closes default", "tenant", queueRef(v1beta1, "default"), busv1alpha1.CloseQueueAction,
			"Command CloseQueue on queue default refused: user tenant may not update queue default " +
				"(verb update on queues.scheduling.volcano.sh), which ringfire requires of whoever opens or closes a Queue"},
		{"tenant opens default", "tenant", queueRef(v1beta1, "default"), busv1alpha1.OpenQueueAction,
			"Command OpenQueue on queue default refused: user tenant may not update queue default"},
		{"tenant, queue without apiVersion", "tenant", queueRef("", "default"), busv1alpha1.CloseQueueAction, "user tenant may not update queue default"},
		{"tenant, queue of another version", "tenant", queueRef("scheduling.volcano.sh/v1", "q"), busv1alpha1.CloseQueueAction, "user tenant may not update queue q"},
		{"tenant, a Queue of another group", "tenant", queueRef("example.com/v1", "default"), busv1alpha1.CloseQueueAction, ""},
		{"tenant, a Job of its namespace", "tenant", jobRef, busv1alpha1.AbortJobAction, ""},
		{"steerer closes its queue", "steerer", queueRef(v1beta1, "steerable"), busv1alpha1.CloseQueueAction, ""},
		{"steerer opens its queue", "steerer", queueRef(v1beta1, "steerable"), busv1alpha1.OpenQueueAction, ""},
		{"steerer closes default", "steerer", queueRef(v1beta1, "default"), busv1alpha1.CloseQueueAction, "user steerer may not update queue default"},
		{"admin closes default", "admin", queueRef(v1beta1, "default"), busv1alpha1.CloseQueueAction, ""},
	} {
		t.Run(r.name, func(t *testing.T) {
			if checked := r.want != ""; r.user == "tenant" && checked != queue.TargetsQueue(r.ref) {
				t.Errorf("the policy checks %+v: %v; the Queue controller acts on it: %v", r.ref, checked, queue.TargetsQueue(r.ref))
			}
			checkForbidden(t, create(r.user, r.ref, r.action), r.want)
		})
	}

	t.Run("update", func(t *testing.T) {
		tenant := users["tenant"].BusV1alpha1().Commands(namespace)
		cmd, err := tenant.Create(ctx, &busv1alpha1.Command{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "retarget-"}, Action: string(busv1alpha1.CloseQueueAction), TargetObject: jobRef,
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cmd.TargetObject = queueRef(v1beta1, "default")
		_, err = tenant.Update(ctx, cmd, metav1.UpdateOptions{})
		checkForbidden(t, err, "Command CloseQueue on queue default refused: user tenant may not update queue default")

		// An update that keeps the target is not checked again.
		mine, err := users["admin"].BusV1alpha1().Commands(namespace).Create(ctx, &busv1alpha1.Command{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "labelled-"}, Action: string(busv1alpha1.CloseQueueAction),
			TargetObject: queueRef(v1beta1, "default"),
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mine.Labels = map[string]string{"seen": "true"}
		if _, err := tenant.Update(ctx, mine, metav1.UpdateOptions{}); err != nil {
			t.Errorf("an update keeping the target is refused: %v", err)
		}
		for _, name := range []string{cmd.Name, mine.Name} {
			_ = users["admin"].BusV1alpha1().Commands(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		}
	})
}

// grantCommands lets users create, update and read Commands in the namespace, and the second of
// them update the queue "steerable" too.
func grantCommands(ctx context.Context, t *testing.T, kube kubernetes.Interface, users ...string) {
	t.Helper()
	var subjects []rbacv1.Subject
	for _, u := range users {
		subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.UserKind, Name: u})
	}
	_, err := kube.RbacV1().Roles(namespace).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "commands"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"bus.volcano.sh"}, Resources: []string{"commands"},
			Verbs: []string{"create", "update", "get", "list"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = kube.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "commands"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "commands"},
		Subjects:   subjects,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "steer-steerable"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"scheduling.volcano.sh"}, Resources: []string{"queues"},
			ResourceNames: []string{"steerable"}, Verbs: []string{"update"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "steer-steerable"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "steer-steerable"},
		Subjects:   subjects[1:],
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// waitAccepted retries try for up to 10 seconds until it succeeds.
func waitAccepted(t *testing.T, what string, try func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := try()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not in force within 10s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkForbidden fails the test unless err is Forbidden carrying want, or nil when want is "".
func checkForbidden(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("refused: %v", err)
	case want == "":
	case err == nil:
		t.Errorf("accepted; want refused with %q", want)
	case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want):
		t.Errorf("got %v; want Forbidden with %q", err, want)
	default:
		t.Logf("refused: %s", fmt.Sprint(err))
	}
}
