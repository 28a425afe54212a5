package cache

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// StripManagedFields drops an object's managed fields and nothing else, and leaves what is not
// an object (a tombstone) alone; SlimBatchJob drops them from the batch/v1 Jobs ringfire
// manages, which it keeps whole otherwise.
func TestStripManagedFields(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "p", Namespace: "ns", Labels: map[string]string{"a": "b"},
		Annotations:   map[string]string{lastApplied: "{}"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "ringfire", Operation: metav1.ManagedFieldsOperationUpdate}},
	}}
	got, err := StripManagedFields(pod)
	if err != nil || got != any(pod) {
		t.Fatalf("got %v, %v; want the pod itself", got, err)
	}
	if pod.ManagedFields != nil || pod.Labels["a"] != "b" || pod.Annotations[lastApplied] != "{}" {
		t.Fatalf("stripped pod: %+v", pod.ObjectMeta)
	}
	tomb := toolscache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}
	if got, err := StripManagedFields(tomb); err != nil || got != any(tomb) {
		t.Fatalf("tombstone: %v, %v", got, err)
	}

	managedBy := BatchJobManager
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec:       batchv1.JobSpec{ManagedBy: &managedBy, Parallelism: new(int32(3))},
	}
	got, _ = SlimBatchJob(job)
	if kept := got.(*batchv1.Job); kept.ManagedFields != nil || kept.Spec.Parallelism == nil {
		t.Fatalf("a Job ringfire manages: %+v", kept)
	}
}

// SlimPod keeps of a pod what the Job controllers read (metadata, status, the spec fields they
// name, the init containers' names and restart policies) and drops the rest; anything else is
// only stripped of its managed fields.
func TestSlimPod(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	deleted := metav1.Now()
	exited := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error"}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "j-worker-0", Namespace: "ns", UID: "u", ResourceVersion: "7", DeletionTimestamp: &deleted,
			Labels: map[string]string{"volcano.sh/job-name": "j"}, Annotations: map[string]string{"volcano.sh/task-spec": "worker"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: "j", UID: "ju"}},
			Finalizers:      []string{"f"},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
		},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "sidecar", Image: "i", RestartPolicy: &always, Env: []corev1.EnvVar{{Name: "A"}}}},
			Containers:     []corev1.Container{{Name: "main", Image: "i", Command: []string{"run"}}},
			Volumes:        []corev1.Volume{{Name: "v"}},
			RestartPolicy:  corev1.RestartPolicyNever, NodeName: "n1", Hostname: "h", Subdomain: "s",
			SchedulerName: "volcano", PriorityClassName: "high", Priority: new(int32(5)),
			Tolerations: []corev1.Toleration{{Key: "k"}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodFailed,
			Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "sidecar", RestartCount: 2, Image: "i", ImageID: "id",
				VolumeMounts: []corev1.VolumeMountStatus{{Name: "v"}}}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "main", State: exited, LastTerminationState: exited, RestartCount: 1,
				Ready: true, Image: "i", ContainerID: "c"}},
			EphemeralContainerStatuses: []corev1.ContainerStatus{{Name: "debug"}},
			Reason:                     "Evicted", Message: "m", PodIP: "10.0.0.1",
		},
	}
	got, err := SlimPod(pod)
	if err != nil || got != any(pod) {
		t.Fatalf("got %v, %v; want the pod itself, cut in place", got, err)
	}
	if pod.ManagedFields != nil || pod.UID != "u" || pod.ResourceVersion != "7" || pod.DeletionTimestamp == nil ||
		pod.Labels["volcano.sh/job-name"] != "j" || pod.Annotations["volcano.sh/task-spec"] != "worker" ||
		len(pod.OwnerReferences) != 1 || len(pod.Finalizers) != 1 {
		t.Errorf("metadata: %+v", pod.ObjectMeta)
	}
	s := pod.Spec
	if len(s.Containers) != 0 || s.Volumes != nil || s.Tolerations != nil {
		t.Errorf("the spec keeps what no controller reads: %+v", s)
	}
	if len(s.InitContainers) != 1 || s.InitContainers[0].Name != "sidecar" || s.InitContainers[0].RestartPolicy == nil ||
		*s.InitContainers[0].RestartPolicy != always || s.InitContainers[0].Image != "" || s.InitContainers[0].Env != nil {
		t.Errorf("init containers: %+v", s.InitContainers)
	}
	if s.RestartPolicy != corev1.RestartPolicyNever || s.NodeName != "n1" || s.Hostname != "h" || s.Subdomain != "s" ||
		s.SchedulerName != "volcano" || s.PriorityClassName != "high" || s.Priority == nil || *s.Priority != 5 {
		t.Errorf("the spec fields read: %+v", s)
	}
	st := pod.Status
	if st.Phase != corev1.PodFailed || len(st.Conditions) != 1 || st.Reason != "Evicted" || st.Message != "m" || st.PodIP != "10.0.0.1" {
		t.Errorf("status: %+v", st)
	}
	if c := st.ContainerStatuses; len(c) != 1 || c[0].Name != "main" || c[0].State.Terminated == nil || c[0].State.Terminated.ExitCode != 3 ||
		c[0].LastTerminationState.Terminated == nil || c[0].RestartCount != 1 || !c[0].Ready || c[0].Image != "" || c[0].ContainerID != "" {
		t.Errorf("container statuses: %+v", c)
	}
	if c := st.InitContainerStatuses; len(c) != 1 || c[0].Name != "sidecar" || c[0].RestartCount != 2 || c[0].ImageID != "" || c[0].VolumeMounts != nil {
		t.Errorf("init container statuses: %+v", c)
	}
	if st.EphemeralContainerStatuses != nil {
		t.Errorf("ephemeral container statuses kept: %+v", st.EphemeralContainerStatuses)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}}, Data: map[string]string{"k": "v"}}
	if got, _ := SlimPod(cm); got != any(cm) || cm.ManagedFields != nil || cm.Data["k"] != "v" {
		t.Errorf("another kind: %+v", cm)
	}
	tomb := toolscache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}
	if got, err := SlimPod(tomb); err != nil || got != any(tomb) {
		t.Errorf("tombstone: %v, %v", got, err)
	}
}
