// Package batchjobtest runs batch/v1 Jobs that name ringfire in spec.managedBy beside the same
// Jobs run by Kubernetes' own Job controller (kube-controller-manager, on the same control
// plane), and compares how each ends.
package batchjobtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/stack"
)

const ns = "default"

// scenario is one Job spec, run twice: by kube-controller-manager ("k-" name) and by
// ringfire ("r-" name, spec.managedBy set).
type scenario struct {
	name  string
	spec  func(*batchv1.Job)
	limit time.Duration
	// during runs once both Jobs exist (suspend and resume, say).
	during func(t *testing.T, s *stack.Stack, names []string)
}

func baseJob(name string, duration, exitCode string) *batchv1.Job {
	ann := map[string]string{cluster.PodDurationAnnotation: duration}
	if exitCode != "" {
		ann[cluster.PodExitCodeAnnotation] = exitCode
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: ann},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "main", Image: "example.invalid/work:1",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
				},
			},
		},
	}
}

var scenarios = []scenario{
	{name: "nonindexed", limit: time.Minute, spec: func(j *batchv1.Job) {
		j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](2)
	}},
	{name: "indexed", limit: time.Minute, spec: func(j *batchv1.Job) {
		j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](4), ptr.To[int32](2)
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	}},
	{name: "workqueue", limit: time.Minute, spec: func(j *batchv1.Job) {
		j.Spec.Parallelism = ptr.To[int32](2)
	}},
	{name: "backofflimit", limit: 2 * time.Minute, spec: func(j *batchv1.Job) {
		j.Spec.BackoffLimit = ptr.To[int32](1)
		j.Spec.Template.Annotations[cluster.PodExitCodeAnnotation] = "3"
	}},
	{name: "deadline", limit: time.Minute, spec: func(j *batchv1.Job) {
		j.Spec.ActiveDeadlineSeconds = ptr.To[int64](3)
		j.Spec.Template.Annotations[cluster.PodDurationAnnotation] = "10m"
	}},
	{name: "replace-failed", limit: 2 * time.Minute, spec: func(j *batchv1.Job) {
		j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
		j.Spec.BackoffLimit = ptr.To[int32](1)
		j.Spec.Template.Annotations[cluster.PodExitCodeAnnotation] = "2"
	}},
	{name: "suspend", limit: time.Minute, spec: func(j *batchv1.Job) {
		j.Spec.Suspend = ptr.To(true)
		j.Spec.Completions = ptr.To[int32](2)
	}, during: func(t *testing.T, s *stack.Stack, names []string) {
		time.Sleep(3 * time.Second)
		for _, name := range names {
			patch := []byte(`{"spec":{"suspend":false}}`)
			if _, err := s.Kube.BatchV1().Jobs(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Errorf("resume %s: %v", name, err)
			}
		}
	}},
	// The pod exits 42, which a FailJob rule matches: Failed (PodFailurePolicy) after one pod.
	{name: "podfailurepolicy-failjob", limit: time.Minute, spec: func(j *batchv1.Job) {
		j.Spec.Template.Annotations[cluster.PodExitCodeAnnotation] = "42"
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
			{Action: batchv1.PodFailurePolicyActionIgnore, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{5}}},
			{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
		}}
	}},
	// The pod exits 5, which an Ignore rule matches: with backoffLimit 0 the failure does not
	// end the Job, nor count; the replacement would only come after the 10 s pod-failure
	// backoff (ignored failures lengthen it too), so the 8 s deadline ends the Job first,
	// with failed=0 and one pod.
	{name: "podfailurepolicy-ignore", limit: time.Minute, spec: func(j *batchv1.Job) {
		j.Spec.Template.Annotations[cluster.PodExitCodeAnnotation] = "5"
		j.Spec.BackoffLimit = ptr.To[int32](0)
		j.Spec.ActiveDeadlineSeconds = ptr.To[int64](8)
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
			{Action: batchv1.PodFailurePolicyActionIgnore, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{5}}},
		}}
	}},
	// Every pod fails: each index gets its one retry (after the 10 s per-index backoff, the
	// replacement carrying the index's failure count), then all three are failed indexes:
	// Failed (FailedIndexes), failed=6, failedIndexes "0-2", six pods.
	{name: "backofflimitperindex", limit: time.Minute, spec: func(j *batchv1.Job) {
		j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](3)
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
		j.Spec.Template.Annotations[cluster.PodExitCodeAnnotation] = "3"
	}},
	// Index 0 alone meets the success policy. Parallelism 1 keeps the outcome deterministic
	// (with 4 pods running at once, how many of them succeed before the verdict is a race):
	// Complete (SuccessPolicy) with completedIndexes "0" and one pod of four.
	{name: "successpolicy", limit: time.Minute, spec: func(j *batchv1.Job) {
		j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](4), ptr.To[int32](1)
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
	}},
	// All four indexes run at once; the rule names all of them, so the verdict waits for the
	// last and the Job completes with reason SuccessPolicy rather than CompletionsReached.
	{name: "successpolicy-all", limit: time.Minute, spec: func(j *batchv1.Job) {
		j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](4), ptr.To[int32](4)
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0-3")}}}
	}},
}

// TestBatchJobsBesideKubernetes runs every scenario under both controllers at once and
// compares the Jobs' final status and their pods.
func TestBatchJobsBesideKubernetes(t *testing.T) {
	s := stack.Start(t, stack.Options{Replicas: 3, Nodes: 4, BatchJobs: true})
	pods := &podLog{created: map[string]int{}, finalizers: map[string]bool{}}
	s.WatchPods(ns, pods.see)

	var wg sync.WaitGroup
	results := make([][2]*batchv1.Job, len(scenarios))
	for i, sc := range scenarios {
		names := []string{"k-" + sc.name, "r-" + sc.name}
		for side, name := range names {
			job := baseJob(name, "1s", "")
			sc.spec(job)
			if side == 1 {
				job.Spec.ManagedBy = ptr.To(cache.BatchJobManager)
			}
			if _, err := s.Kube.BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create %s: %v", name, err)
			}
		}
		wg.Go(func() {
			if sc.during != nil {
				sc.during(t, s, names)
			}
			for side, name := range names {
				results[i][side] = waitFinished(t, s, name, sc.limit)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	time.Sleep(2 * time.Second) // the last finalizer removals reach the watch
	var report strings.Builder
	for i, sc := range scenarios {
		k, r := results[i][0], results[i][1]
		ks, rs := summary(k, pods), summary(r, pods)
		fmt.Fprintf(&report, "%-13s kube: %s\n%-13s ringfire: %s\n", sc.name, ks, "", rs)
		if ks != rs {
			t.Errorf("%s: ringfire ended the Job otherwise than Kubernetes:\n  kube:     %s\n  ringfire: %s", sc.name, ks, rs)
		}
		if n := pods.withFinalizer("r-" + sc.name); n > 0 {
			t.Errorf("%s: %d of ringfire's pods still carry the tracking finalizer", sc.name, n)
		}
	}
	t.Logf("final status, side by side:\n%s", report.String())
}

// summary is what the comparison holds of a finished Job: its conditions (type, status,
// reason, in order), counts, indexes, and how many pods were made for it.
func summary(j *batchv1.Job, pods *podLog) string {
	var conds []string
	for _, c := range j.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s(%s)", c.Type, c.Status, c.Reason))
	}
	st := j.Status
	uncounted := 0
	if u := st.UncountedTerminatedPods; u != nil {
		uncounted = len(u.Succeeded) + len(u.Failed)
	}
	name := strings.SplitN(j.Name, "-", 2)[1]
	return fmt.Sprintf("[%s] succeeded=%d failed=%d active=%d ready=%d terminating=%d completed=%q failedIndexes=%q uncounted=%d completionTime=%v pods=%d names=%v",
		strings.Join(conds, " "), st.Succeeded, st.Failed, st.Active, ptr.Deref(st.Ready, 0), ptr.Deref(st.Terminating, 0),
		st.CompletedIndexes, ptr.Deref(st.FailedIndexes, ""), uncounted, st.CompletionTime != nil, pods.createdFor(j.Name, name),
		pods.shapes(j.Name))
}

// waitFinished waits until the Job has a Complete or Failed condition.
func waitFinished(t *testing.T, s *stack.Stack, name string, limit time.Duration) *batchv1.Job {
	deadline := time.Now().Add(limit)
	for {
		j, err := s.Kube.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			for _, c := range j.Status.Conditions {
				if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
					return j
				}
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("job %s not finished after %v: %+v (%v)", name, limit, j.Status, err)
			return j
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// podLog counts the pods made for each Job and which still carry the tracking finalizer.
type podLog struct {
	mu         sync.Mutex
	created    map[string]int // job name -> pods
	seen       []types.UID
	finalizers map[string]bool // pod name -> has the finalizer now
	owner      map[string]string
}

func (p *podLog) see(ev watch.EventType, pod *corev1.Pod) {
	job := pod.Labels[batchv1.JobNameLabel]
	if job == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.owner == nil {
		p.owner = map[string]string{}
	}
	if !slices.Contains(p.seen, pod.UID) {
		p.seen = append(p.seen, pod.UID)
		p.created[job]++
	}
	p.owner[pod.Name] = job
	p.finalizers[pod.Name] = ev != watch.Deleted && slices.Contains(pod.Finalizers, batchv1.JobTrackingFinalizer)
}

// shapes are the names of the Job's pods with the Job's name and the random suffix taken
// out ("*" for a NonIndexed pod, "2-*" for index 2), sorted: both controllers name pods
// <job>-<5 random> and <job>-<index>-<5 random>.
func (p *podLog) shapes(job string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for pod, owner := range p.owner {
		if owner != job {
			continue
		}
		rest := strings.TrimPrefix(pod, job+"-")
		shape := "?" + rest
		if i := strings.LastIndexByte(rest, '-'); len(rest)-i-1 == 5 || (i < 0 && len(rest) == 5) {
			shape = rest[:i+1] + "*"
		}
		out = append(out, shape)
	}
	slices.Sort(out)
	return out
}

func (p *podLog) createdFor(job, _ string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.created[job]
}

func (p *podLog) withFinalizer(job string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for pod, has := range p.finalizers {
		if has && p.owner[pod] == job {
			n++
		}
	}
	return n
}
