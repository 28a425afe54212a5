package cronjob

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// cronJobKind is the kind of the controller reference a CronJob's Jobs carry.
var cronJobKind = batch.SchemeGroupVersion.WithKind("CronJob")

// JobName is the name of the Job for a scheduled time: the CronJob's name and the time in
// minutes since the Unix epoch, as Kubernetes names them. One name per scheduled time is what
// keeps a Job from being made twice: a second create, from a retry or a stale owner of the
// slot, finds it AlreadyExists.
func JobName(cronJobName string, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cronJobName, scheduled.Unix()/60)
}

// ScheduledTime is the time a Job of the CronJob was started for: from the annotation
// JobFor writes, else from the minute in its name. ok is false for a Job that shows neither.
func ScheduledTime(cronJobName string, job *batch.Job) (time.Time, bool) {
	if at, err := time.Parse(time.RFC3339, job.Annotations[batch.CronJobScheduledTimestampAnnotation]); err == nil {
		return at, true
	}
	minutes, err := strconv.ParseInt(strings.TrimPrefix(job.Name, cronJobName+"-"), 10, 64)
	if err != nil || !strings.HasPrefix(job.Name, cronJobName+"-") {
		return time.Time{}, false
	}
	return time.Unix(minutes*60, 0), true
}

// JobFor is the Job the CronJob starts for a scheduled time: the template's labels,
// annotations and spec, the CronJob as its controller, and the scheduled time in the
// annotation volcano.sh/cronjob-scheduled-timestamp (RFC 3339, in the CronJob's time zone).
func JobFor(cj *batch.CronJob, scheduled time.Time, loc *time.Location) *batch.Job {
	annotations := maps.Clone(cj.Spec.JobTemplate.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[batch.CronJobScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	job := &batch.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:            JobName(cj.Name, scheduled),
			Namespace:       cj.Namespace,
			Labels:          maps.Clone(cj.Spec.JobTemplate.Labels),
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, cronJobKind)},
		},
	}
	cj.Spec.JobTemplate.Spec.DeepCopyInto(&job.Spec)
	return job
}

// ownerOf returns the name and UID of the CronJob that controls job, if one does.
func ownerOf(job *batch.Job) (name string, uid types.UID, ok bool) {
	ref := metav1.GetControllerOf(job)
	if ref == nil || ref.Kind != cronJobKind.Kind || ref.APIVersion != cronJobKind.GroupVersion().String() {
		return "", "", false
	}
	return ref.Name, ref.UID, true
}

// finished reports whether a Job has ended for good, and whether it succeeded. These are the
// final phases of ringfire's Job controller: Aborted is not among them, since a ResumeJob
// Command brings an Aborted Job back, so it stays active.
func finished(job *batch.Job) (done, succeeded bool) {
	switch job.Status.State.Phase {
	case batch.Completed:
		return true, true
	case batch.Failed, batch.Terminated:
		return true, false
	}
	return false, false
}

// refOf is the reference status.active keeps to a Job.
func refOf(job *batch.Job) corev1.ObjectReference {
	return corev1.ObjectReference{
		APIVersion: batch.SchemeGroupVersion.String(), Kind: "Job",
		Namespace: job.Namespace, Name: job.Name, UID: job.UID, ResourceVersion: job.ResourceVersion,
	}
}

// activeHas reports whether status.active refers to the Job with uid.
func activeHas(st *batch.CronJobStatus, uid types.UID) bool {
	return slices.ContainsFunc(st.Active, func(r corev1.ObjectReference) bool { return r.UID == uid })
}

// activeHasName reports whether status.active refers to a Job named name.
func activeHasName(st *batch.CronJobStatus, name string) bool {
	return slices.ContainsFunc(st.Active, func(r corev1.ObjectReference) bool { return r.Name == name })
}

// dropActive removes the Job with uid from status.active.
func dropActive(st *batch.CronJobStatus, uid types.UID) {
	st.Active = slices.DeleteFunc(st.Active, func(r corev1.ObjectReference) bool { return r.UID == uid })
	if len(st.Active) == 0 {
		st.Active = nil
	}
}

// beyondHistory returns the oldest of the finished jobs past the limit, oldest first: those
// to delete. Jobs are ordered by creation, then name (Volcano Jobs have no start time).
func beyondHistory(jobs []*batch.Job, limit int32) []*batch.Job {
	if len(jobs) <= int(limit) {
		return nil
	}
	sorted := slices.Clone(jobs)
	slices.SortFunc(sorted, func(a, b *batch.Job) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return sorted[:len(sorted)-int(limit)]
}
