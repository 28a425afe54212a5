package state

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/controllers/kit"
)

// The values Volcano's mutating webhook gives a Job that leaves them unset.
const (
	DefaultQueue         = "default"
	DefaultSchedulerName = kit.DefaultSchedulerName
	DefaultMaxRetry      = int32(3)
)

// Defaults fills in what Volcano's mutating webhook fills in when a Job is created, and returns
// the paths it set, in order; none when the Job was complete. It is idempotent.
//
// The webhook works in this order, and so does Defaults: queue, scheduler name, maxRetry; per task
// its name (default<index>), DNS policy for host networking, minAvailable (its replicas) and
// maxRetry; then the job's minAvailable, summed over the now defaulted task minAvailable; then the
// plugins the distributed-framework plugins depend on.
func Defaults(job *batch.Job) []string {
	var set []string
	spec := &job.Spec
	if spec.Queue == "" {
		spec.Queue = DefaultQueue
		set = append(set, "spec.queue")
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = DefaultSchedulerName
		set = append(set, "spec.schedulerName")
	}
	if spec.MaxRetry == 0 {
		spec.MaxRetry = DefaultMaxRetry
		set = append(set, "spec.maxRetry")
	}
	for i := range spec.Tasks {
		set = defaultTask(&spec.Tasks[i], i, set)
	}
	if spec.MinAvailable == 0 {
		var sum int64 // saturated below: tasks of huge minimums must not wrap to a small one
		for _, t := range spec.Tasks {
			sum += int64(*t.MinAvailable)
		}
		if sum != 0 {
			spec.MinAvailable = ClampInt32(sum)
			set = append(set, "spec.minAvailable")
		}
	}
	return defaultPlugins(spec, set)
}

// TaskName is the name of the task at index of a Job: its own, else the webhook's default.
func TaskName(t *batch.TaskSpec, index int) string {
	if t.Name != "" {
		return t.Name
	}
	return batch.DefaultTaskSpec + strconv.Itoa(index)
}

func defaultTask(t *batch.TaskSpec, index int, set []string) []string {
	path := "spec.tasks[" + strconv.Itoa(index) + "]."
	if t.Name == "" {
		t.Name = TaskName(t, index)
		set = append(set, path+"name")
	}
	if t.Template.Spec.HostNetwork && t.Template.Spec.DNSPolicy == "" {
		// A host-network pod with the default policy would resolve through the node, not the cluster.
		t.Template.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
		set = append(set, path+"template.spec.dnsPolicy")
	}
	if t.MinAvailable == nil {
		n := t.Replicas
		t.MinAvailable = &n
		set = append(set, path+"minAvailable")
	}
	if t.MaxRetry == 0 {
		t.MaxRetry = DefaultMaxRetry
		set = append(set, path+"maxRetry")
	}
	return set
}

// defaultPlugins adds the plugins others need: tensorflow, mpi and pytorch address their peers
// through the svc plugin's hostnames, and mpi logs in to them with the ssh plugin's keys.
func defaultPlugins(spec *batch.JobSpec, set []string) []string {
	if spec.Plugins == nil {
		return set
	}
	has := func(name string) bool { _, ok := spec.Plugins[name]; return ok }
	if (has("tensorflow") || has("mpi") || has("pytorch")) && !has("svc") {
		spec.Plugins["svc"] = []string{}
		set = append(set, "spec.plugins.svc")
	}
	if has("mpi") && !has("ssh") {
		spec.Plugins["ssh"] = []string{}
		set = append(set, "spec.plugins.ssh")
	}
	return set
}
