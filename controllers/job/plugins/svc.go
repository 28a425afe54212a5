package plugins

import (
	"flag"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/build"
)

// HostsMountPath is where the svc plugin mounts the Job's hosts ConfigMap in every container.
const HostsMountPath = "/etc/volcano"

// svc gives the pods of a Job stable DNS names: a headless Service named as the Job, a hostname
// and subdomain on every pod, a ConfigMap listing the hosts of each task (mounted at
// HostsMountPath and exported as VC_<TASK>_HOSTS and VC_<TASK>_NUM), and a NetworkPolicy that
// admits traffic to the Job's pods from the Job's pods only.
//
// Flags: --publish-not-ready-addresses (the Service lists pods before they are ready),
// --disable-network-policy, --inject-hosts-env (default true; false leaves the VC_<TASK>_HOSTS
// and VC_<TASK>_NUM variables out of the pods, the hosts file is mounted all the same).
type svc struct {
	ignoredArgs
	env                      Env
	publishNotReadyAddresses bool
	disableNetworkPolicy     bool
	injectHostsEnv           bool
}

func newSvc(args []string, env Env) (Plugin, error) {
	p := &svc{env: env}
	p.ignored = parseArgs(args, func(fs *flag.FlagSet) {
		fs.BoolVar(&p.publishNotReadyAddresses, "publish-not-ready-addresses", false,
			"list pods in the Service before they are ready")
		fs.BoolVar(&p.disableNetworkPolicy, "disable-network-policy", false, "create no NetworkPolicy")
		fs.BoolVar(&p.injectHostsEnv, "inject-hosts-env", true, "export VC_<TASK>_HOSTS and VC_<TASK>_NUM in the pods")
	})
	return p, nil
}

func (p *svc) Name() string { return "svc" }

// hostsConfigMapName is the name of the ConfigMap of hosts: <job>-svc.
func hostsConfigMapName(job *batch.Job) string { return job.Name + "-svc" }

func (p *svc) OnPodCreate(pod *corev1.Pod, job *batch.Job) error {
	if pod.Spec.Hostname == "" {
		pod.Spec.Hostname = pod.Name
	}
	if pod.Spec.Subdomain == "" {
		pod.Spec.Subdomain = job.Name
	}
	cm := hostsConfigMapName(job)
	var vars []corev1.EnvVar
	for _, t := range job.Spec.Tasks {
		if !p.injectHostsEnv {
			break
		}
		key := strings.ToUpper(envKey(t.Name))
		for _, name := range []string{"VC_" + key + "_HOSTS", "VC_" + key + "_NUM"} {
			vars = append(vars, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: cm},
					Key:                  name,
				},
			}})
		}
	}
	addEnv(pod, true, vars...)
	addMount(pod,
		corev1.Volume{Name: cm, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}},
		}},
		corev1.VolumeMount{Name: cm, MountPath: HostsMountPath})
	return nil
}

func (p *svc) OnJobAdd(job *batch.Job) (Changes, error) {
	c := Changes{
		Apply:  []Object{p.hostsConfigMap(job)},
		Create: []Object{p.service(job)},
	}
	if !p.disableNetworkPolicy {
		c.Create = append(c.Create, p.networkPolicy(job))
	}
	return c, nil
}

// OnJobUpdate rewrites the hosts ConfigMap, which changes when a task is scaled.
func (p *svc) OnJobUpdate(job *batch.Job) (Changes, error) {
	return Changes{Apply: []Object{p.hostsConfigMap(job)}}, nil
}

func (p *svc) OnJobDelete(job *batch.Job) (Changes, error) {
	c := Changes{Delete: []Object{
		&corev1.ConfigMap{TypeMeta: typeMeta("v1", "ConfigMap"), ObjectMeta: named(job, hostsConfigMapName(job))},
		&corev1.Service{TypeMeta: typeMeta("v1", "Service"), ObjectMeta: named(job, job.Name)},
	}}
	if !p.disableNetworkPolicy {
		c.Delete = append(c.Delete, &networkingv1.NetworkPolicy{
			TypeMeta: typeMeta("networking.k8s.io/v1", "NetworkPolicy"), ObjectMeta: named(job, job.Name),
		})
	}
	return c, nil
}

// Hosts is the content of a Job's hosts ConfigMap. For each task, with dashes in its name made
// underscores: "<task>.host" lists its hosts one a line (the file under HostsMountPath);
// "VC_<TASK>_HOSTS" lists them comma-separated and "VC_<TASK>_NUM" counts them (for the
// environment). A host is <hostname>.<subdomain>, by default <pod name>.<job name>.
func Hosts(job *batch.Job) map[string]string {
	data := make(map[string]string, 3*len(job.Spec.Tasks))
	for i := range job.Spec.Tasks {
		t := &job.Spec.Tasks[i]
		names := fqdns(taskHosts(job, t))
		key := envKey(t.Name)
		upper := strings.ToUpper(key)
		data[key+".host"] = strings.Join(names, "\n")
		data["VC_"+upper+"_HOSTS"] = strings.Join(names, ",")
		data["VC_"+upper+"_NUM"] = strconv.Itoa(len(names))
	}
	return data
}

func (p *svc) hostsConfigMap(job *batch.Job) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   typeMeta("v1", "ConfigMap"),
		ObjectMeta: build.OwnedMeta(job, hostsConfigMapName(job), p.env.Slot),
		Data:       Hosts(job),
	}
}

// jobPods selects the pods of job.
func jobPods(job *batch.Job) map[string]string {
	return map[string]string{batch.JobNameKey: job.Name, batch.JobNamespaceKey: job.Namespace}
}

// service is the headless Service that gives the Job's pods their DNS records. A Service needs a
// port to be valid; Volcano's placeholder is kept, so clients see the same object.
func (p *svc) service(job *batch.Job) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   typeMeta("v1", "Service"),
		ObjectMeta: build.OwnedMeta(job, job.Name, p.env.Slot),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 jobPods(job),
			PublishNotReadyAddresses: p.publishNotReadyAddresses,
			Ports: []corev1.ServicePort{{
				Name:       "placeholder-volcano",
				Port:       1,
				Protocol:   corev1.ProtocolTCP,
				TargetPort: intstr.FromInt32(1),
			}},
		},
	}
}

func (p *svc) networkPolicy(job *batch.Job) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		TypeMeta:   typeMeta("networking.k8s.io/v1", "NetworkPolicy"),
		ObjectMeta: build.OwnedMeta(job, job.Name, p.env.Slot),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: jobPods(job)},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{
					PodSelector: &metav1.LabelSelector{MatchLabels: jobPods(job)},
				}},
			}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// named is the metadata of an object of job to delete: its namespace and name.
func named(job *batch.Job, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: job.Namespace}
}
