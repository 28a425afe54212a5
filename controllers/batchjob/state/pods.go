package state

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	noIndex = -1

	// indexEnvVar is the variable through which a pod of an Indexed Job
	// learns its completion index.
	indexEnvVar = "JOB_COMPLETION_INDEX"

	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"

	// maxGenerateNameLen is how long a generateName may be before the API
	// server's random suffix is appended.
	maxGenerateNameLen = 58
)

func isTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// isActive: still running or about to, and not being deleted.
func isActive(p *corev1.Pod) bool {
	return !isTerminal(p) && p.DeletionTimestamp == nil
}

// isTerminating: being deleted but not yet in a terminal phase.
func isTerminating(p *corev1.Pod) bool {
	return !isTerminal(p) && p.DeletionTimestamp != nil
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func readySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func hasFinalizer(p *corev1.Pod) bool {
	return slices.Contains(p.Finalizers, TrackingFinalizer)
}

// completionIndex reads the pod's completion index annotation, noIndex when
// absent or malformed.
func completionIndex(p *corev1.Pod) int {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return noIndex
	}
	ix, err := strconv.Atoi(v)
	if err != nil || ix < 0 {
		return noIndex
	}
	return ix
}

// phaseRank orders non-terminal phases from earliest to latest.
func phaseRank(ph corev1.PodPhase) int {
	switch ph {
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	}
	return 0
}

func restartCounts(p *corev1.Pod) (regular, sidecar int32) {
	for _, c := range p.Status.ContainerStatuses {
		regular = max(regular, c.RestartCount)
	}
	sidecars := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	for _, c := range p.Status.InitContainerStatuses {
		if sidecars[c.Name] {
			sidecar = max(sidecar, c.RestartCount)
		}
	}
	return regular, sidecar
}

// zeroFirstThenLater reports whether a sorts before b when the zero time
// comes first and otherwise later times come first.
func zeroFirstThenLater(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero()
	}
	return a.After(b)
}

// cheaperToRemove orders pods so that the ones that have made the least
// progress are removed first: unscheduled before scheduled, pending before
// unknown before running, not ready before ready, ready for less time before
// ready for longer, more restarts before fewer, newer before older. Ties are
// broken by name so the order is deterministic.
func cheaperToRemove(a, b *corev1.Pod) bool {
	if a.Spec.NodeName != b.Spec.NodeName && (a.Spec.NodeName == "" || b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if ra, rb := phaseRank(a.Status.Phase), phaseRank(b.Status.Phase); ra != rb {
		return ra < rb
	}
	if isReady(a) != isReady(b) {
		return !isReady(a)
	}
	if isReady(a) {
		if ta, tb := readySince(a), readySince(b); !ta.Equal(tb) {
			return zeroFirstThenLater(ta, tb)
		}
	}
	ra, sa := restartCounts(a)
	rb, sb := restartCounts(b)
	if ra != rb {
		return ra > rb
	}
	if sa != sb {
		return sa > sb
	}
	if ca, cb := a.CreationTimestamp.Time, b.CreationTimestamp.Time; !ca.Equal(cb) {
		return zeroFirstThenLater(ca, cb)
	}
	return a.Name < b.Name
}

func sortByRemovalCost(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool { return cheaperToRemove(pods[i], pods[j]) })
}

func sortByName(pods []*corev1.Pod) {
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Name != pods[j].Name {
			return pods[i].Name < pods[j].Name
		}
		return pods[i].UID < pods[j].UID
	})
}

// finishTime estimates when a finished pod stopped: the last container
// termination, else the time it stopped being ready, else its deletion time
// minus the grace period, else its creation time.
func finishTime(p *corev1.Pod) time.Time {
	if t, ok := containersFinishedAt(p); ok {
		return t
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if p.DeletionTimestamp != nil {
		grace := time.Duration(ptr.Deref(p.DeletionGracePeriodSeconds, 0)) * time.Second
		return p.DeletionTimestamp.Add(-grace)
	}
	return p.CreationTimestamp.Time
}

// containersFinishedAt is the latest termination among the regular
// containers, then folded with the sidecar containers' terminations. A group
// in which some container has not terminated yields no time of its own (the
// sidecar pass then starts afresh), as Kubernetes computes it.
func containersFinishedAt(p *corev1.Pod) (time.Time, bool) {
	latest := func(start *time.Time, statuses []corev1.ContainerStatus, keep func(string) bool) *time.Time {
		out := start
		for _, cs := range statuses {
			if keep != nil && !keep(cs.Name) {
				continue
			}
			t := cs.State.Terminated
			if t == nil || t.FinishedAt.IsZero() {
				return nil
			}
			if out == nil || out.Before(t.FinishedAt.Time) {
				at := t.FinishedAt.Time
				out = &at
			}
		}
		return out
	}
	sidecars := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	t := latest(nil, p.Status.ContainerStatuses, nil)
	t = latest(t, p.Status.InitContainerStatuses, func(n string) bool { return sidecars[n] })
	if t == nil {
		return time.Time{}, false
	}
	return *t, true
}

// PodFor returns the pod to create for the given completion index (noIndex,
// -1, for a NonIndexed Job), with no failure history (see PodForIndex). The
// API server completes the name from GenerateName. The caller may add its
// own labels before creating it.
func PodFor(job *batchv1.Job, index int) *corev1.Pod {
	tmpl := job.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    job.Namespace,
			GenerateName: job.Name + "-",
			Labels:       tmpl.Labels,
			Annotations:  tmpl.Annotations,
			Finalizers:   tmpl.Finalizers,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         batchv1.SchemeGroupVersion.String(),
				Kind:               "Job",
				Name:               job.Name,
				UID:                job.UID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: tmpl.Spec,
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	// The API server puts these on the template when the Job is created;
	// fill them in for a template that lacks them.
	setIfMissing(pod.Labels, batchv1.ControllerUidLabel, string(job.UID))
	setIfMissing(pod.Labels, batchv1.JobNameLabel, job.Name)
	setIfMissing(pod.Labels, legacyControllerUIDLabel, string(job.UID))
	setIfMissing(pod.Labels, legacyJobNameLabel, job.Name)
	if !slices.Contains(pod.Finalizers, TrackingFinalizer) {
		pod.Finalizers = append(pod.Finalizers, TrackingFinalizer)
	}
	if isIndexed(job) && index >= 0 {
		ix := strconv.Itoa(index)
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[batchv1.JobCompletionIndexAnnotation] = ix
		pod.Labels[batchv1.JobCompletionIndexAnnotation] = ix
		pod.Spec.Hostname = job.Name + "-" + ix
		pod.GenerateName = indexedGenerateName(job.Name, index)
		for i := range pod.Spec.InitContainers {
			addIndexEnv(&pod.Spec.InitContainers[i])
		}
		for i := range pod.Spec.Containers {
			addIndexEnv(&pod.Spec.Containers[i])
		}
		if job.Spec.BackoffLimitPerIndex != nil {
			// PodFor starts the index without failures; PodForIndex (and
			// Decision.PodFor) set the history a replacement takes over.
			pod.Annotations[batchv1.JobIndexFailureCountAnnotation] = "0"
		}
	}
	return pod
}

func setIfMissing(m map[string]string, k, v string) {
	if _, ok := m[k]; !ok {
		m[k] = v
	}
}

func indexedGenerateName(jobName string, index int) string {
	suffix := "-" + strconv.Itoa(index) + "-"
	if len(jobName)+len(suffix) > maxGenerateNameLen {
		jobName = jobName[:maxGenerateNameLen-len(suffix)]
	}
	return jobName + suffix
}

func addIndexEnv(c *corev1.Container) {
	for _, e := range c.Env {
		if e.Name == indexEnvVar {
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{
		Name: indexEnvVar,
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: fmt.Sprintf("metadata.labels['%s']", batchv1.JobCompletionIndexAnnotation),
		}},
	})
}

func sortStable(pods []*corev1.Pod, less func(a, b *corev1.Pod) bool) {
	sort.SliceStable(pods, func(i, j int) bool { return less(pods[i], pods[j]) })
}
