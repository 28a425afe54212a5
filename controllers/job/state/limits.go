package state

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// The most replicas ringfire runs in one Job. The replica that holds a Job's slot keeps every pod
// of it in memory and counts them on every reconcile, and some plugins write one line per replica
// into an object or into every pod; without a bound, one Job of replicas: 2147483647 took each
// replica of the ring down in turn. docs/jobs.md ("Limits") gives the measurements behind the
// numbers. The CRDs (deploy/crds/gen) refuse a Job beyond them at admission with the messages
// below; the controller refuses it again (TooLarge) on a cluster whose CRDs do not.
const (
	// MaxReplicas bounds the replicas of a Job, all tasks together, and so of any one task:
	// ten times fewer than batch/v1's 100,000 Indexed completions, because here one replica
	// of the ring, not the whole control plane, carries the Job.
	MaxReplicas = 10000
	// MaxReplicasListed bounds a Job whose plugins list every replica's host in one object:
	// svc's hosts ConfigMap (each host twice) and ssh's Secret, both at most 1 MiB. 4096 hosts
	// of the longest names the API server takes still fit.
	MaxReplicasListed = 4096
	// MaxReplicasInPods bounds a Job whose plugins write every replica's host into pods:
	// tensorflow's TF_CONFIG in every pod, mpi's MPI_HOST in every master pod. The bytes grow
	// with the square of the replicas.
	MaxReplicasInPods = 1024
)

// The most a task's pod template may carry in labels and annotations. Every pod of the task
// copies them, the API server and every watcher of pods keep them per pod, and a reconcile
// builds pods from them: a template of 1 MiB of labels in a Job of 400 replicas cost the holder
// of its slot 400 MiB of pods, through no other limit. Kubernetes caps a pod's annotations at
// 256 KiB and a label's value at 63 bytes but not the labels' count; real templates carry a
// few dozen entries in a few KiB (docs/jobs.md, "Limits"). The CRDs (deploy/crds/gen) refuse a
// template beyond these at admission; the controller holds its Job (TooLarge) on a cluster
// whose CRDs do not.
const (
	// MaxTemplateMetadataBytes bounds the keys and values of a template's labels and
	// annotations together.
	MaxTemplateMetadataBytes = 64 << 10
	// MaxTemplateMetadataEntries bounds the labels, and the annotations, of a template: each
	// map has at most this many keys (which also keeps the CRD's rule over them cheap).
	MaxTemplateMetadataEntries = 256
)

// ListingPlugins list every replica's host in one object: svc and ssh themselves, and the
// plugins that add svc (Defaults). InPodPlugins write the list into pods. Both are in the order
// a message names the first of them the Job has.
var (
	ListingPlugins = []string{"svc", "ssh", "pytorch", "mpi", "tensorflow"}
	InPodPlugins   = []string{"tensorflow", "mpi"}
)

// ReasonTooLarge is the reason, in status.state and in a Warning Event, of a Job the controller
// does not run because it asks for more than the limits above.
const ReasonTooLarge = "TooLarge"

// ReplicaLimit is the most replicas the Job may have with the plugins it names, and the plugin
// that sets that limit ("" for MaxReplicas).
func ReplicaLimit(plugins map[string][]string) (int64, string) {
	for _, name := range InPodPlugins {
		if _, ok := plugins[name]; ok {
			return MaxReplicasInPods, name
		}
	}
	for _, name := range ListingPlugins {
		if _, ok := plugins[name]; ok {
			return MaxReplicasListed, name
		}
	}
	return MaxReplicas, ""
}

// TooLarge says why the Job asks for more than ringfire runs, or is "": too many replicas, or a
// task's template with too many labels and annotations. It reads each task once and does no
// work in proportion to the replicas or to a template's size, so it is safe on any spec: the
// controller asks it before anything is sized by the spec.
func TooLarge(job *batch.Job) string {
	var total int64
	for _, t := range job.Spec.Tasks {
		// A negative task makes no pods, and must not make room for another's: it counts 0.
		// At most 2^31 per task, the sum cannot overflow an int64 for any number of tasks.
		total += int64(max(t.Replicas, 0))
	}
	limit, plugin := ReplicaLimit(job.Spec.Plugins)
	if total > limit {
		return TooManyReplicas(total, limit, plugin)
	}
	if int64(job.Spec.MinAvailable) > limit {
		return fmt.Sprintf("spec.minAvailable is %d, above ringfire's limit of %d replicas per Job: "+
			"lower it to at most the replicas of the tasks (docs/jobs.md, Limits)", job.Spec.MinAvailable, limit)
	}
	for i := range job.Spec.Tasks {
		if problem := TemplateTooLarge(fmt.Sprintf("spec.tasks[%d].template", i), &job.Spec.Tasks[i].Template); problem != "" {
			return problem
		}
	}
	return ""
}

// TemplateTooLarge says why the pod template at path carries more labels and annotations than
// ringfire takes, or is "". Its work is bounded by the limits, not by the template: it stops
// counting at the first entry past them. The message names the template by its path, never
// by the user's text.
func TemplateTooLarge(path string, t *corev1.PodTemplateSpec) string {
	for _, m := range []struct {
		what    string
		entries map[string]string
	}{{"labels", t.Labels}, {"annotations", t.Annotations}} {
		if n := len(m.entries); n > MaxTemplateMetadataEntries {
			return fmt.Sprintf("%s.metadata has %d %s; ringfire takes at most %d, since every pod copies them: "+
				"keep fewer, and data in a ConfigMap or the pod's spec (docs/jobs.md, Limits)", path, n, m.what, MaxTemplateMetadataEntries)
		}
	}
	if n := TemplateMetadataBytes(t, MaxTemplateMetadataBytes); n > MaxTemplateMetadataBytes {
		return fmt.Sprintf("%s.metadata carries more than %d bytes of labels and annotations (keys and values together); "+
			"%s", path, MaxTemplateMetadataBytes, templateBytesReason)
	}
	return ""
}

// TemplateMetadataBytes is the size of the keys and values of t's labels and annotations,
// counted until it passes limit: a result above limit means "more than limit".
func TemplateMetadataBytes(t *corev1.PodTemplateSpec, limit int) int {
	n := 0
	for _, m := range []map[string]string{t.Labels, t.Annotations} {
		for k, v := range m {
			if n += len(k) + len(v); n > limit {
				return n
			}
		}
	}
	return n
}

// templateBytesReason ends the messages of a template over MaxTemplateMetadataBytes, the
// controller's and the CRD's.
const templateBytesReason = "ringfire takes at most that much in a pod template, since every pod copies it: " +
	"keep data in a ConfigMap or the pod's spec (docs/jobs.md, Limits)"

// TemplateTooLargeAtAdmission is the message of the CRD rule (deploy/crds/gen) over a
// template's labels and annotations: the controller's words, without the template's path,
// which the API server's error gives.
func TemplateTooLargeAtAdmission() string {
	return fmt.Sprintf("the labels and annotations of a pod template carry more than %d bytes (keys and values together); %s",
		MaxTemplateMetadataBytes, templateBytesReason)
}

// TooManyReplicas is the message for a Job whose tasks ask for total replicas, above limit, set
// by plugin when it is not "".
func TooManyReplicas(total, limit int64, plugin string) string {
	return tooMany(strconv.FormatInt(total, 10), limit, plugin)
}

// TooManyReplicasAtAdmission is the message of the CRD rule (deploy/crds/gen): the same words,
// without the total, which a CRD's message cannot afford to print (the API server estimates the
// string of a number as unbounded, and refuses the CRD).
func TooManyReplicasAtAdmission(limit int64, plugin string) string {
	return tooMany(fmt.Sprintf("more than %d", limit), limit, plugin)
}

func tooMany(total string, limit int64, plugin string) string {
	return fmt.Sprintf("spec.tasks ask for %s replicas in all; %s %d per Job: "+
		"lower the replicas, or split the work into several Jobs (docs/jobs.md, Limits)", total, LimitReason(plugin), limit)
}

// LimitReason is the middle of TooManyReplicas's message: why the limit is what it is.
func LimitReason(plugin string) string {
	switch {
	case plugin == "":
		return "ringfire runs at most"
	case slices.Contains(InPodPlugins, plugin):
		return "the " + plugin + " plugin writes every replica's host into pods, so ringfire runs at most"
	}
	return "the " + plugin + " plugin lists every replica's host in one object of at most 1 MiB, so ringfire runs at most"
}

// SumInt32 adds int32s in int64 and saturates at the bounds of int32, so that a sum of
// replicas or minimums that a spec made too large reads as too large, never as negative.
func SumInt32(xs ...int32) int32 {
	var n int64
	for _, x := range xs {
		n += int64(x)
	}
	return ClampInt32(n)
}

// ClampInt32 is n within the bounds of int32.
func ClampInt32(n int64) int32 {
	return int32(min(max(n, math.MinInt32), math.MaxInt32))
}

// MulInt32 is a×b, saturated at the bounds of int32.
func MulInt32(a, b int32) int32 {
	return ClampInt32(int64(a) * int64(b)) // |a×b| < 2^62: exact in int64
}
