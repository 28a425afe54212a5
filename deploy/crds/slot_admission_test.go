package crds_test

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/deploy"
	"github.com/ringfire/ringfire/shard"
)

// slotLabel: ringfire-slot lets only ringfire's ServiceAccount (who may place a slot) set,
// change or remove ringfire.io/slot, and only a Job controller make an object a Volcano Job
// controls (what adoption labels into the Job's slot). A tenant's account named ringfire in its
// own namespace is a tenant; an update that keeps both, the kubelet's status write and the
// garbage collector's removal of an owner reference pass.
func slotLabel(ctx context.Context, t *testing.T, kube kubernetes.Interface, admin *rest.Config) {
	if err := deploy.InstallRBAC(ctx, admin); err != nil {
		t.Fatal(err)
	}
	ringfireCfg, err := deploy.ServiceAccountConfig(ctx, admin, 600)
	if err != nil {
		t.Fatal(err)
	}
	grantObjects(ctx, t, kube, "slot-tenant", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "tenant"},
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: deploy.ServiceAccount, Namespace: namespace})
	if _, err := kube.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: deploy.ServiceAccount}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	as := func(user string) *rest.Config {
		cfg := rest.CopyConfig(admin)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		return cfg
	}
	configs := map[string]*rest.Config{
		"tenant":            as("tenant"),
		"tenant's ringfire": as("system:serviceaccount:" + namespace + ":" + deploy.ServiceAccount),
		"ringfire":          ringfireCfg,
		"admin":             admin,
		"garbage collector": as("system:serviceaccount:kube-system:generic-garbage-collector"),
	}
	kubes := map[string]kubernetes.Interface{}
	for who, cfg := range configs {
		kubes[who] = kubernetes.NewForConfigOrDie(cfg)
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	labelled := map[string]string{shard.SlotLabel: "7"}
	cm := func(name string, labels map[string]string, refs ...metav1.OwnerReference) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, OwnerReferences: refs}}
	}
	// The roles and bindings reach the authorizer a moment after they are written.
	waitAccepted(t, "the tenant's role", func() error {
		_, err := kubes["tenant"].CoreV1().ConfigMaps(namespace).Create(ctx, cm("probe", nil), dry)
		return err
	})
	waitAccepted(t, "ringfire's role", func() error {
		_, err := kubes["ringfire"].CoreV1().ConfigMaps(namespace).Create(ctx, cm("probe", labelled), dry)
		return err
	})
	const refused = "the label ringfire.io/slot on configmaps default/forged refused: only ringfire places an object in a slot"

	t.Run("create", func(t *testing.T) {
		for _, tc := range []struct {
			who, want string // want: part of the refusal, "" to be accepted
		}{
			{"tenant", refused},
			{"tenant", "user tenant may not set it (verb place on slots.ringfire.io, which ringfire's ClusterRole grants its ServiceAccount). Leave the label out"},
			{"tenant's ringfire", "user system:serviceaccount:default:ringfire may not set it"},
			{"ringfire", ""},
			{"admin", ""},
		} {
			_, err := kubes[tc.who].CoreV1().ConfigMaps(namespace).Create(ctx, cm("forged", labelled), dry)
			checkForbidden(t, err, tc.want)
		}
		// Without the label a tenant's object is its own business.
		if _, err := kubes["tenant"].CoreV1().ConfigMaps(namespace).Create(ctx, cm("forged", map[string]string{"app": "x"}), dry); err != nil {
			t.Errorf("a tenant's ConfigMap without the label: %v", err)
		}
		// Every kind a slot's reflectors select, and the ssh plugin's Secret.
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "forged", Labels: labelled},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		_, err := kubes["tenant"].CoreV1().Pods(namespace).Create(ctx, pod, dry)
		checkForbidden(t, err, "the label ringfire.io/slot on pods default/forged refused")
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{GenerateName: "forged-", Labels: labelled},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}
		_, err = kubes["tenant"].CoreV1().Services(namespace).Create(ctx, svc, dry)
		checkForbidden(t, err, "the label ringfire.io/slot on services default/forged-")
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "forged", Labels: labelled}}
		_, err = kubes["tenant"].CoreV1().Secrets(namespace).Create(ctx, secret, dry)
		checkForbidden(t, err, "the label ringfire.io/slot on secrets default/forged refused")
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "forged", Labels: labelled},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		_, err = kubes["tenant"].CoreV1().PersistentVolumeClaims(namespace).Create(ctx, pvc, dry)
		checkForbidden(t, err, "the label ringfire.io/slot on persistentvolumeclaims default/forged refused")
		vc := versioned.NewForConfigOrDie(configs["tenant"])
		pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "forged", Labels: labelled}}
		_, err = vc.SchedulingV1beta1().PodGroups(namespace).Create(ctx, pg, dry)
		checkForbidden(t, err, "the label ringfire.io/slot on podgroups default/forged refused")
	})

	t.Run("update", func(t *testing.T) {
		cms := func(who string) func(context.Context, *corev1.ConfigMap) error {
			return func(ctx context.Context, c *corev1.ConfigMap) error {
				_, err := kubes[who].CoreV1().ConfigMaps(namespace).Update(ctx, c, metav1.UpdateOptions{})
				return err
			}
		}
		// ringfire's object, in the tenant's namespace: the tenant may edit all of it but the label.
		theirs, err := kubes["ringfire"].CoreV1().ConfigMaps(namespace).Create(ctx, cm("ringfires", labelled), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name   string
			labels map[string]string
			want   string
		}{
			{"change", map[string]string{shard.SlotLabel: "8"}, "on configmaps default/ringfires refused: only ringfire places an object in a slot"},
			{"change, message", map[string]string{shard.SlotLabel: "8"}, "user tenant may not change it"},
			{"remove", map[string]string{"app": "x"}, "user tenant may not remove it"},
			{"empty", map[string]string{shard.SlotLabel: ""}, "user tenant may not change it"},
			{"keep", map[string]string{shard.SlotLabel: "7", "app": "x"}, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := theirs.DeepCopy()
				c.Labels = tc.labels
				c.Data = map[string]string{"k": "v"}
				checkForbidden(t, cms("tenant")(ctx, c), tc.want)
				if tc.want == "" {
					if theirs, err = kubes["admin"].CoreV1().ConfigMaps(namespace).Get(ctx, c.Name, metav1.GetOptions{}); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
		// The tenant's own object: adding the label is placing it.
		own, err := kubes["tenant"].CoreV1().ConfigMaps(namespace).Create(ctx, cm("own", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		own.Labels = labelled
		checkForbidden(t, cms("tenant")(ctx, own.DeepCopy()), "on configmaps default/own refused: only ringfire places an object in a slot")
		patch := []byte(`{"metadata":{"labels":{"ringfire.io/slot":"7"}}}`)
		_, err = kubes["tenant"].CoreV1().ConfigMaps(namespace).Patch(ctx, "own", types.MergePatchType, patch, metav1.PatchOptions{})
		checkForbidden(t, err, "user tenant may not set it")
		// As adoption labels what Volcano made.
		if _, err := kubes["ringfire"].CoreV1().ConfigMaps(namespace).Patch(ctx, "own", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Errorf("ringfire's label patch refused: %v", err)
		}
	})

	t.Run("pod status", func(t *testing.T) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ringfires", Labels: labelled},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}, NodeName: "nowhere"}}
		pod, err := kubes["ringfire"].CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// As the kubelet writes a pod's status: the labels as they are.
		pod.Status.Phase = corev1.PodRunning
		if pod, err = kubes["tenant"].CoreV1().Pods(namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("a status write that keeps the label: %v", err)
		}
		pod.Labels = map[string]string{shard.SlotLabel: "9"}
		_, err = kubes["tenant"].CoreV1().Pods(namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		checkForbidden(t, err, "the label ringfire.io/slot on pods/status default/ringfires refused")
		_ = kube.CoreV1().Pods(namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})

	t.Run("volcano job controller", func(t *testing.T) {
		// A Job of the UID, so that the garbage collector leaves its dependents be.
		owner, err := versioned.NewForConfigOrDie(admin).BatchV1alpha1().Jobs(namespace).Create(ctx, validJob("j"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ref := func(controller bool) metav1.OwnerReference {
			return metav1.OwnerReference{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: owner.Name,
				UID: owner.UID, Controller: ptr.To(controller)}
		}
		const want = "the owner reference with controller: true to Volcano Job j on configmaps default/owned refused: " +
			"only a Job controller makes an object a Volcano Job controls"
		for _, tc := range []struct {
			who        string
			controller bool
			want       string
		}{
			{"tenant", true, want},
			{"tenant", true, "user tenant may not update jobs/status.batch.volcano.sh in every namespace. Drop controller: true"},
			{"tenant's ringfire", true, "user system:serviceaccount:default:ringfire may not update jobs/status"},
			{"tenant", false, ""},
			{"ringfire", true, ""},
			{"admin", true, ""},
		} {
			_, err := kubes[tc.who].CoreV1().ConfigMaps(namespace).Create(ctx, cm("owned", nil, ref(tc.controller)), dry)
			checkForbidden(t, err, tc.want)
		}
		// A batch/v1 Job's controller reference is no adoption's.
		batch := metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "u", Controller: ptr.To(true)}
		if _, err = kubes["tenant"].CoreV1().ConfigMaps(namespace).Create(ctx, cm("owned", nil, batch), dry); err != nil {
			t.Errorf("a batch/v1 Job's controller reference: %v", err)
		}

		// Added by an update, the reference is refused; a reference made by a Job controller
		// stays, through the tenant's edits and the garbage collector's removal of it.
		own, err := kubes["tenant"].CoreV1().ConfigMaps(namespace).Create(ctx, cm("owned", nil, ref(false)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		own.OwnerReferences = []metav1.OwnerReference{ref(true)}
		_, err = kubes["tenant"].CoreV1().ConfigMaps(namespace).Update(ctx, own, metav1.UpdateOptions{})
		checkForbidden(t, err, want)
		made, err := kubes["ringfire"].CoreV1().ConfigMaps(namespace).Create(ctx, cm("made", labelled, ref(true)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		made.Data = map[string]string{"edited": "by the tenant"}
		if _, err := kubes["tenant"].CoreV1().ConfigMaps(namespace).Update(ctx, made, metav1.UpdateOptions{}); err != nil {
			t.Errorf("a tenant's edit that keeps the reference: %v", err)
		}
		orphan, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": []any{}}})
		if _, err := kubes["garbage collector"].CoreV1().ConfigMaps(namespace).Patch(ctx, "made", types.MergePatchType, orphan, metav1.PatchOptions{}); err != nil {
			t.Errorf("the garbage collector's removal of the reference: %v", err)
		}
	})
}

// grantObjects lets subjects create, update, patch and read, in the namespace, every kind the
// slot policy matches, as a namespace's admin may.
func grantObjects(ctx context.Context, t *testing.T, kube kubernetes.Interface, name string, subjects ...rbacv1.Subject) {
	t.Helper()
	verbs := []string{"create", "update", "patch", "get", "list"}
	_, err := kube.RbacV1().Roles(namespace).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods", "pods/status", "services", "configmaps", "secrets", "persistentvolumeclaims"}, Verbs: verbs},
			{APIGroups: []string{"scheduling.volcano.sh"}, Resources: []string{"podgroups"}, Verbs: verbs},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: verbs},
			// As much as a namespaced role can give: nothing of it reaches the cluster-wide checks.
			{APIGroups: []string{"ringfire.io"}, Resources: []string{"slots"}, Verbs: []string{"place"}},
			{APIGroups: []string{"batch.volcano.sh"}, Resources: []string{"jobs/status"}, Verbs: []string{"update"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = kube.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   subjects,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}
