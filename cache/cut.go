package cache

import (
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/shard"
)

// What a cached object costs is bounded by what ringfire reads of it, not by what its writer
// put in it. Labels and annotations are cut, wherever the cache keeps an object of a slot or
// a summary, to the keys below: the ones some controller or the cache itself reads. A tenant
// may write a megabyte of labels on a pod, or label a ConfigMap of 60,000 keys with a live
// Job's slot; what reaches the index is a few hundred bytes of it.
//
// A controller that comes to read another label or annotation of a cached object must add its
// key here: the cut drops every other one.

// readLabels are the label keys the controllers and the cache read of a cached object.
var readLabels = keySet(
	shard.SlotLabel,
	batch.JobNameKey, batch.JobNamespaceKey, batch.TaskSpecKey, batch.TaskIndex, batch.TaskPartitionID,
	batch.QueueNameKey,
	// batch/v1: the labels a Job's generated selector matches (its pods' are read by
	// BatchCaughtUp through the selector; a manual selector's keys are kept too, ownerOf).
	batchv1.ControllerUidLabel, batchv1.JobNameLabel, "controller-uid", "job-name",
	batchv1.JobCompletionIndexAnnotation,
	// JobFlows and JobTemplates find their Jobs by these.
	"volcano.sh/createdByJobTemplate", "volcano.sh/createdByJobFlow",
	shard.ReleaseAnnotation, // a summary and its Job alike: a fill is no release
)

// readAnnotations are the annotation keys the controllers and the cache read of a cached
// object.
var readAnnotations = keySet(
	batch.TaskSpecKey, batch.JobVersion, batch.JobNameKey, batch.TaskIndex,
	scheduling.KubeGroupNameAnnotationKey,
	batchv1.JobCompletionIndexAnnotation, batchv1.JobIndexFailureCountAnnotation,
	batchv1.JobIndexIgnoredFailureCountAnnotation,
	batch.CronJobScheduledTimestampAnnotation,
	"volcano.sh/createdByJobTemplate", "volcano.sh/createdByJobFlow",
	shard.ReleaseAnnotation, // a summary and its Job alike: a fill is no release
)

// readFinalizers are the finalizers the controllers read: the batch/v1 Job controller's
// tracking finalizer, which it takes off its pods (also those of a Job gone, whatever they
// are cached as).
var readFinalizers = keySet(batchv1.JobTrackingFinalizer)

// Bounds of what the cut keeps of one object's metadata. A name is at most 253 bytes, a label
// value 63 (both the API server's own limits); an annotation ringfire reads is a name, a
// number or a time, and one longer than maxValue is no value ringfire wrote or can use, so it
// is dropped rather than cut short (a cut value could read as another valid one).
const (
	maxName  = 253
	maxValue = 256
)

// StubBytes bounds the JSON of a stub (stub): the identity of an object, its controller
// reference, its deletion, the labels and annotations ringfire reads and the finalizer it
// takes off. With every kept field at its bound it is 5,516 bytes
// (TestStubOfTheLargestObjectIsBounded); a typical one is 400 to 600.
const StubBytes = 6 << 10

func keySet(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// cutMeta returns what the cache keeps of m: the identity (name, namespace, UID,
// resourceVersion, generation, creation), the deletion, the controller reference alone (none
// when its fields are longer than any valid one), the finalizers of readFinalizers, and the
// labels of readLabels or extra, the annotations of readAnnotations, each within its bound.
// It never shares a map or slice with m.
func cutMeta(m *metav1.ObjectMeta, extra map[string]bool) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, CreationTimestamp: m.CreationTimestamp,
		DeletionTimestamp: m.DeletionTimestamp, DeletionGracePeriodSeconds: m.DeletionGracePeriodSeconds,
		Labels:      cutMap(m.Labels, readLabels, extra, 63),
		Annotations: cutMap(m.Annotations, readAnnotations, nil, maxValue),
	}
	if len(out.Name) > maxName {
		out.Name = out.Name[:maxName] // never so on an object the API server holds
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil && validRef(ref) {
		out.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	for _, f := range m.Finalizers {
		if readFinalizers[f] {
			out.Finalizers = append(out.Finalizers, f)
		}
	}
	return out
}

// validRef reports whether an owner reference's fields are within the lengths any real one
// has: an API version (group/version) and kind of at most 316 and 63 bytes, a name of 253 and
// a UID of 128.
func validRef(ref *metav1.OwnerReference) bool {
	return len(ref.APIVersion) <= 316 && len(ref.Kind) <= 63 && len(ref.Name) <= maxName && len(ref.UID) <= 128
}

// cutMap keeps the entries of m whose key is in keys or extra and whose value is at most
// maxLen bytes; nil when none is left.
func cutMap(m map[string]string, keys, extra map[string]bool, maxLen int) map[string]string {
	var out map[string]string
	if len(m) < len(keys)+len(extra) {
		for k, v := range m {
			if (keys[k] || extra[k]) && len(v) <= maxLen {
				if out == nil {
					out = make(map[string]string, 4)
				}
				out[k] = v
			}
		}
		return out
	}
	for _, set := range []map[string]bool{keys, extra} {
		for k := range set {
			if v, ok := m[k]; ok && len(v) <= maxLen {
				if out == nil {
					out = make(map[string]string, 4)
				}
				out[k] = v
			}
		}
	}
	return out
}

// svcSuffix ends the name of the one ConfigMap of a Job whose content the Job controller
// reads: the svc plugin's hosts ConfigMap, "<job>-svc" (controllers/job/plugins, Hosts).
const svcSuffix = "-svc"

// MaxHostsData and maxHostsKeys bound the content of a Job's hosts ConfigMap the cache keeps:
// its keys and values (the API server's own bound for a ConfigMap; the largest the svc plugin
// writes for a Job within ringfire's limits is 989,038 bytes, docs/jobs.md, Limits), and its
// keys, three a task of at most 128 (the CRDs' bound), which a map costs entryCost each
// beyond their bytes. One with more (edited by someone else, or a Job of more tasks on
// Volcano's CRDs) is kept without it, and the Job controller, finding it differs, writes it
// again (a write that changes nothing when the content is its own).
const (
	MaxHostsData = 1 << 20
	maxHostsKeys = 3 * 128
)

// isVolcanoJob reports whether ref names a Volcano Job.
func isVolcanoJob(ref *metav1.OwnerReference) bool {
	return ref.Kind == "Job" && strings.HasPrefix(ref.APIVersion, batch.SchemeGroupVersion.Group+"/")
}

// owner is what the cache knows of the controller of an object of a slot (Cache.ownerOf).
type owner struct {
	// known: the controller reference names, by UID, a Job the cache holds (a Volcano Job,
	// or a batch/v1 Job ringfire manages).
	known bool
	job   string    // that Job's name
	uid   types.UID // and UID
	// labels are label keys to keep beyond readLabels: a batch/v1 Job's selector's, which
	// BatchCaughtUp matches on its pods.
	labels map[string]bool
}

// cut returns what the cache keeps of obj, an object of r that o controls (a zero owner:
// none ringfire knows), and whether that is a stub: the object's metadata as cutMeta keeps it,
// and nothing else. It changes obj in place where it keeps it (the object was decoded for the
// cache and is shared with no one yet). Anything else than an object of r (a tombstone) is
// left as it is.
//
// What is kept beyond a stub, only ever for an object of a known Job:
//   - a pod: what SlimPod keeps of its spec and status (its phase, conditions and container
//     states, read by the Job controllers);
//   - the Job's own PodGroup (named after it): whole, less its managed fields, because the
//     Job controller updates it from the cached copy (build.UpdatePodGroup) and an update
//     with its labels or annotations cut would delete them;
//   - the svc plugin's hosts ConfigMap "<job>-svc": its data, up to MaxHostsData in
//     maxHostsKeys keys, which the Job controller compares with what it would write.
//
// Services, PVCs and NetworkPolicies are always kept as stubs: the controllers read their
// names, UIDs, owners and deletion, never their body.
func cut(r Resource, obj any, o owner) (any, bool) {
	switch x := obj.(type) {
	case *corev1.Pod:
		if !o.known {
			return &corev1.Pod{TypeMeta: x.TypeMeta, ObjectMeta: cutMeta(&x.ObjectMeta, nil)}, true
		}
		_, _ = SlimPod(x)
		x.ObjectMeta = cutMeta(&x.ObjectMeta, o.labels)
		return x, false
	case *scheduling.PodGroup:
		if o.known && (x.Name == o.job || x.Name == o.job+"-"+string(o.uid)) {
			x.ManagedFields = nil
			return x, false
		}
		return &scheduling.PodGroup{TypeMeta: x.TypeMeta, ObjectMeta: cutMeta(&x.ObjectMeta, nil)}, true
	case *corev1.ConfigMap:
		stub := &corev1.ConfigMap{TypeMeta: x.TypeMeta, ObjectMeta: cutMeta(&x.ObjectMeta, nil)}
		if o.known && x.Name == o.job+svcSuffix && len(x.BinaryData) == 0 && len(x.Data) <= maxHostsKeys &&
			mapBytes(x.Data)-entryCost*len(x.Data) <= MaxHostsData {
			stub.Data = x.Data
			return stub, false
		}
		return stub, true
	case *corev1.Service:
		return &corev1.Service{TypeMeta: x.TypeMeta, ObjectMeta: cutMeta(&x.ObjectMeta, nil)}, true
	case *corev1.PersistentVolumeClaim:
		return &corev1.PersistentVolumeClaim{TypeMeta: x.TypeMeta, ObjectMeta: cutMeta(&x.ObjectMeta, nil)}, true
	case *networkingv1.NetworkPolicy:
		return &networkingv1.NetworkPolicy{TypeMeta: x.TypeMeta, ObjectMeta: cutMeta(&x.ObjectMeta, nil)}, true
	}
	return obj, false
}

// wantsBody reports whether cut keeps more of obj than a stub once o is known: what a stub
// of it misses when its Job comes to the cache after it (refetch).
func wantsBody(obj any, o owner) bool {
	switch x := obj.(type) {
	case *corev1.Pod:
		return true
	case *scheduling.PodGroup:
		return x.Name == o.job || x.Name == o.job+"-"+string(o.uid)
	case *corev1.ConfigMap:
		return x.Name == o.job+svcSuffix
	}
	return false
}

// mapBytes is the bytes of m's keys and values, with what the map and the strings cost
// in memory beyond them (entryCost an entry): a ConfigMap of 60,000 short keys is 700 KB of
// JSON and about 7 MB decoded.
func mapBytes[V string | []byte](m map[string]V) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v) + entryCost
	}
	return n
}

// entryCost is what one entry of a map of strings costs beyond its bytes: the map's slot for
// two string headers (32 bytes) at its load, and the two strings' allocations rounded up.
const entryCost = 96

// jobBytes is about what the parts of job its writer can make large take: its labels and
// annotations and those of its tasks' templates, and its containers' commands, arguments and
// environment. What is left is of a size ringfire sets (names, counts, a status), 2 KiB.
func jobBytes(job *batch.Job) int {
	n := 2<<10 + mapBytes(job.Labels) + mapBytes(job.Annotations)
	for i := range job.Spec.Tasks {
		t := &job.Spec.Tasks[i].Template
		n += mapBytes(t.Labels) + mapBytes(t.Annotations)
		for _, cs := range [][]corev1.Container{t.Spec.InitContainers, t.Spec.Containers} {
			for c := range cs {
				n += stringsBytes(cs[c].Command) + stringsBytes(cs[c].Args)
				for _, e := range cs[c].Env {
					n += len(e.Name) + len(e.Value) + entryCost
				}
			}
		}
	}
	return n
}

func stringsBytes(ss []string) int {
	n := 0
	for _, s := range ss {
		n += len(s) + 16
	}
	return n
}

// madeForBarePods reports whether obj is a PodGroup as the PodGroup controller makes it for
// pods no Job controls (controllers/podgroup): named podgroup-<UID of its controller>. Its
// controller is a ReplicaSet, a StatefulSet or the pod itself, no Job the cache knows; it is
// kept as a stub (nothing reads more of it) but is not counted as foreign.
func madeForBarePods(obj any) bool {
	pg, ok := obj.(*scheduling.PodGroup)
	if !ok {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(pg)
	return ref != nil && ref.UID != "" && pg.Name == batch.PodgroupNamePrefix+string(ref.UID)
}
