package plugins

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestHosts(t *testing.T) {
	fixed := task("ps", 3)
	fixed.Template.Spec.Hostname = "param"
	fixed.Template.Spec.Subdomain = "cluster"
	job := testJob(task("master", 1), task("mpi-worker", 2), fixed, task("idle", 0))
	want := map[string]string{
		"master.host":         "train-master-0.train",
		"VC_MASTER_HOSTS":     "train-master-0.train",
		"VC_MASTER_NUM":       "1",
		"mpi_worker.host":     "train-mpi-worker-0.train\ntrain-mpi-worker-1.train",
		"VC_MPI_WORKER_HOSTS": "train-mpi-worker-0.train,train-mpi-worker-1.train",
		"VC_MPI_WORKER_NUM":   "2",
		// A template that fixes the hostname gives all replicas one name, listed once.
		"ps.host":       "param.cluster",
		"VC_PS_HOSTS":   "param.cluster",
		"VC_PS_NUM":     "1",
		"idle.host":     "",
		"VC_IDLE_HOSTS": "",
		"VC_IDLE_NUM":   "0",
	}
	equal(t, "Hosts", Hosts(job), want)
}

func TestSvcPod(t *testing.T) {
	job := testJob(task("master", 1), task("mpi-worker", 2))
	pod := podOf(t, job, "mpi-worker", 1)
	if err := mustNew(t, "svc").OnPodCreate(pod, job); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.Hostname != "train-mpi-worker-1" || pod.Spec.Subdomain != "train" {
		t.Errorf("hostname %q subdomain %q, want train-mpi-worker-1 and train", pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	ref := func(key string) corev1.EnvVar {
		return corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "train-svc"}, Key: key,
		}}}
	}
	wantEnv := []corev1.EnvVar{ref("VC_MASTER_HOSTS"), ref("VC_MASTER_NUM"), ref("VC_MPI_WORKER_HOSTS"), ref("VC_MPI_WORKER_NUM")}
	wantMounts := []corev1.VolumeMount{{Name: "train-svc", MountPath: "/etc/volcano"}}
	for _, c := range append(pod.Spec.Containers, pod.Spec.InitContainers...) {
		equal(t, c.Name+" env", c.Env, wantEnv)
		equal(t, c.Name+" mounts", c.VolumeMounts, wantMounts)
	}
	equal(t, "volumes", pod.Spec.Volumes, []corev1.Volume{{Name: "train-svc", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "train-svc"}},
	}}})

	// --inject-hosts-env=false: the hosts file is mounted, no variable is exported.
	pod = podOf(t, job, "mpi-worker", 0)
	if err := mustNew(t, "svc", "--inject-hosts-env=false").OnPodCreate(pod, job); err != nil {
		t.Fatal(err)
	}
	for _, c := range append(pod.Spec.Containers, pod.Spec.InitContainers...) {
		equal(t, c.Name+" env without hosts variables", c.Env, []corev1.EnvVar(nil))
		equal(t, c.Name+" mounts without hosts variables", c.VolumeMounts, wantMounts)
	}

	// A template's own hostname and subdomain stay.
	job.Spec.Tasks[0].Template.Spec.Hostname = "boss"
	job.Spec.Tasks[0].Template.Spec.Subdomain = "team"
	pod = podOf(t, job, "master", 0)
	if err := mustNew(t, "svc").OnPodCreate(pod, job); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.Hostname != "boss" || pod.Spec.Subdomain != "team" {
		t.Errorf("hostname %q subdomain %q, want the template's boss and team", pod.Spec.Hostname, pod.Spec.Subdomain)
	}
}

func TestSvcObjects(t *testing.T) {
	job := testJob(task("master", 1), task("worker", 2))
	selector := map[string]string{"volcano.sh/job-name": "train", "volcano.sh/job-namespace": "ns"}

	c, err := mustNew(t, "svc", "--publish-not-ready-addresses").OnJobAdd(job)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Apply) != 1 || len(c.Create) != 2 || len(c.Delete) != 0 {
		t.Fatalf("changes: %d to apply, %d to create, %d to delete; want 1, 2, 0", len(c.Apply), len(c.Create), len(c.Delete))
	}
	cm := c.Apply[0].(*corev1.ConfigMap)
	owned(t, cm, job)
	if cm.Name != "train-svc" || cm.Kind != "ConfigMap" || cm.APIVersion != "v1" {
		t.Errorf("ConfigMap %s (%s %s)", cm.Name, cm.APIVersion, cm.Kind)
	}
	equal(t, "ConfigMap data", cm.Data, Hosts(job))

	svc := c.Create[0].(*corev1.Service)
	owned(t, svc, job)
	if svc.Name != "train" || svc.Kind != "Service" {
		t.Errorf("Service %s (%s)", svc.Name, svc.Kind)
	}
	equal(t, "Service spec", svc.Spec, corev1.ServiceSpec{
		ClusterIP:                "None",
		Selector:                 selector,
		PublishNotReadyAddresses: true,
		Ports: []corev1.ServicePort{{
			Name: "placeholder-volcano", Port: 1, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(1),
		}},
	})

	np := c.Create[1].(*networkingv1.NetworkPolicy)
	owned(t, np, job)
	if np.Name != "train" || np.Kind != "NetworkPolicy" || np.APIVersion != "networking.k8s.io/v1" {
		t.Errorf("NetworkPolicy %s (%s %s)", np.Name, np.APIVersion, np.Kind)
	}
	equal(t, "NetworkPolicy spec", np.Spec, networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: selector},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: selector}}},
		}},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
	})

	// Without the flag the Service publishes ready pods only.
	c, _ = mustNew(t, "svc").OnJobAdd(job)
	if c.Create[0].(*corev1.Service).Spec.PublishNotReadyAddresses {
		t.Errorf("publishNotReadyAddresses set without the flag")
	}

	// A scaled task changes the hosts; the update rewrites the ConfigMap only.
	job.Spec.Tasks[1].Replicas = 3
	c, _ = mustNew(t, "svc").OnJobUpdate(job)
	if len(c.Apply) != 1 || len(c.Create)+len(c.Delete) != 0 {
		t.Fatalf("update changes %+v, want the ConfigMap alone", c)
	}
	if got := c.Apply[0].(*corev1.ConfigMap).Data["VC_WORKER_NUM"]; got != "3" {
		t.Errorf("VC_WORKER_NUM after scaling to 3 = %q", got)
	}

	c, _ = mustNew(t, "svc").OnJobDelete(job)
	equal(t, "deletions", names(c.Delete), []string{"ConfigMap ns/train-svc", "Service ns/train", "NetworkPolicy ns/train"})
}

func TestSvcWithoutNetworkPolicy(t *testing.T) {
	job := testJob(task("worker", 2))
	p := mustNew(t, "svc", "--disable-network-policy")
	c, _ := p.OnJobAdd(job)
	equal(t, "created", names(c.Create), []string{"Service ns/train"})
	c, _ = p.OnJobDelete(job)
	equal(t, "deleted", names(c.Delete), []string{"ConfigMap ns/train-svc", "Service ns/train"})
}

// names lists objects as "Kind namespace/name".
func names(objs []Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetObjectKind().GroupVersionKind().Kind+" "+o.GetNamespace()+"/"+o.GetName())
	}
	return out
}
