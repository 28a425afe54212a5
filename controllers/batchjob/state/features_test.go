package state

import (
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// --- podFailurePolicy -------------------------------------------------------

func onExit(action batchv1.PodFailurePolicyAction, op batchv1.PodFailurePolicyOnExitCodesOperator, codes ...int32) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: codes}}
}

func onCondition(action batchv1.PodFailurePolicyAction, t corev1.PodConditionType) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: t, Status: corev1.ConditionTrue}}}
}

func withPolicy(rules ...batchv1.PodFailurePolicyRule) func(*batchv1.Job) {
	return func(j *batchv1.Job) { j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules} }
}

func exited(codes map[string]int32) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		p.Status.ContainerStatuses = nil
		for _, name := range []string{"a", "b", "c"} {
			if code, ok := codes[name]; ok {
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: name,
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(t0.Add(-time.Minute))}}})
			}
		}
	}
}

func podCondition(t corev1.PodConditionType) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue})
	}
}

func TestJudge(t *testing.T) {
	const (
		failJob   = batchv1.PodFailurePolicyActionFailJob
		ignore    = batchv1.PodFailurePolicyActionIgnore
		count     = batchv1.PodFailurePolicyActionCount
		failIndex = batchv1.PodFailurePolicyActionFailIndex
		in        = batchv1.PodFailurePolicyOnExitCodesOpIn
		notIn     = batchv1.PodFailurePolicyOnExitCodesOpNotIn
	)
	named := func(r batchv1.PodFailurePolicyRule, c string) batchv1.PodFailurePolicyRule {
		r.OnExitCodes.ContainerName = ptr.To(c)
		return r
	}
	cases := []struct {
		name  string
		rules []batchv1.PodFailurePolicyRule
		pod   *corev1.Pod
		want  verdict
	}{
		{"no rule matches: counted", []batchv1.PodFailurePolicyRule{onExit(failJob, in, 42)},
			newPod("p", exited(map[string]int32{"a": 1})), verdict{counts: true}},
		{"In matches: FailJob with message", []batchv1.PodFailurePolicyRule{onExit(failJob, in, 42)},
			newPod("p", exited(map[string]int32{"a": 42})),
			verdict{rule: failJob, counts: true, failJob: "Container a for pod ns/p failed with exit code 42 matching FailJob rule at index 0"}},
		{"NotIn matches a non-zero code", []batchv1.PodFailurePolicyRule{onExit(ignore, notIn, 1, 2)},
			newPod("p", exited(map[string]int32{"a": 3})), verdict{rule: ignore}},
		{"NotIn never matches exit code 0", []batchv1.PodFailurePolicyRule{onExit(ignore, notIn, 1)},
			newPod("p", exited(map[string]int32{"a": 0, "b": 1})), verdict{counts: true}},
		{"first matching rule wins", []batchv1.PodFailurePolicyRule{onExit(count, in, 7), onExit(ignore, in, 5), onExit(failJob, in, 5)},
			newPod("p", exited(map[string]int32{"a": 5})), verdict{rule: ignore}},
		{"second container's code", []batchv1.PodFailurePolicyRule{onExit(failJob, in, 9)},
			newPod("p", exited(map[string]int32{"a": 1, "b": 9})),
			verdict{rule: failJob, counts: true, failJob: "Container b for pod ns/p failed with exit code 9 matching FailJob rule at index 0"}},
		{"containerName restricts", []batchv1.PodFailurePolicyRule{named(onExit(failJob, in, 9), "a")},
			newPod("p", exited(map[string]int32{"a": 1, "b": 9})), verdict{counts: true}},
		{"init container checked after regular ones", []batchv1.PodFailurePolicyRule{onExit(failJob, in, 4)},
			newPod("p", phase(corev1.PodFailed), func(p *corev1.Pod) {
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 4}}}}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "a", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}}
			}),
			verdict{rule: failJob, counts: true, failJob: "Container init for pod ns/p failed with exit code 4 matching FailJob rule at index 0"}},
		{"DisruptionTarget ignored", []batchv1.PodFailurePolicyRule{onExit(failJob, in, 1), onCondition(ignore, corev1.DisruptionTarget)},
			newPod("p", phase(corev1.PodFailed), podCondition(corev1.DisruptionTarget)), verdict{rule: ignore}},
		{"condition FailJob message", []batchv1.PodFailurePolicyRule{onCondition(failJob, corev1.DisruptionTarget)},
			newPod("p", phase(corev1.PodFailed), podCondition(corev1.DisruptionTarget)),
			verdict{rule: failJob, counts: true, failJob: "Pod ns/p has condition DisruptionTarget matching FailJob rule at index 0"}},
		{"condition with other status does not match", []batchv1.PodFailurePolicyRule{onCondition(ignore, corev1.DisruptionTarget)},
			newPod("p", phase(corev1.PodFailed), func(p *corev1.Pod) {
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse}}
			}), verdict{counts: true}},
		{"FailIndex counts", []batchv1.PodFailurePolicyRule{onExit(failIndex, in, 3)},
			newPod("p", exited(map[string]int32{"a": 3})), verdict{rule: failIndex, counts: true}},
		{"unknown action passed over", []batchv1.PodFailurePolicyRule{onExit("Bogus", in, 3), onExit(ignore, in, 3)},
			newPod("p", exited(map[string]int32{"a": 3})), verdict{rule: ignore}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := judge(newJob(withPolicy(tc.rules...)), tc.pod); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := judge(newJob(), newPod("p", exited(map[string]int32{"a": 42}))); got != (verdict{counts: true}) {
		t.Errorf("no policy: %+v", got)
	}
}

func policyJob(rules ...batchv1.PodFailurePolicyRule) *batchv1.Job {
	return newJob(withPolicy(rules...), func(j *batchv1.Job) {
		j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](2), ptr.To[int32](2)
		j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed) // the API's default with a policy
	})
}

func TestPodFailurePolicyFailJob(t *testing.T) {
	c := newCluster(t, policyJob(onExit(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, 42)))
	c.step()
	c.run()
	c.exit("job-0", 42)
	d := c.step()
	msg := "Container c for pod ns/job-0 failed with exit code 42 matching FailJob rule at index 0"
	ft := findCondition(d.Status.Conditions, batchv1.JobFailureTarget)
	if ft == nil || ft.Reason != batchv1.JobReasonPodFailurePolicy || ft.Message != msg || hasCond(d.Status, batchv1.JobFailed) {
		t.Fatalf("conditions = %+v", d.Status.Conditions)
	}
	if got := names(d.Delete); !slices.Equal(got, []string{"job-1"}) || len(d.Create) != 0 {
		t.Fatalf("delete = %v create = %v", got, d.Create)
	}
	// job-1 still terminates: no Failed yet.
	c.step()
	if hasCond(&c.job.Status, batchv1.JobFailed) || *c.job.Status.Terminating != 1 {
		t.Fatalf("status = %+v", c.job.Status)
	}
	c.kubeletStops()
	c.settle()
	st := c.job.Status
	f := findCondition(st.Conditions, batchv1.JobFailed)
	if f == nil || f.Reason != batchv1.JobReasonPodFailurePolicy || f.Message != msg || st.Failed != 2 || *st.Terminating != 0 {
		t.Fatalf("status = %+v", st)
	}
	if !slices.Contains(c.events, Event{corev1.EventTypeWarning, batchv1.JobReasonPodFailurePolicy, msg}) {
		t.Errorf("events = %v", c.events)
	}
}

func TestPodFailurePolicyFailJobBeatsBackoffLimit(t *testing.T) {
	// Both the FailJob rule and backoffLimit 0 apply; the policy is
	// evaluated first.
	job := policyJob(onExit(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, 42))
	job.Spec.BackoffLimit = ptr.To[int32](0)
	started(job)
	d := decide(t, Input{Job: job, Pods: []*corev1.Pod{newPod("a", exited(map[string]int32{"c": 42}))}})
	if r := findCondition(d.Status.Conditions, batchv1.JobFailureTarget).Reason; r != batchv1.JobReasonPodFailurePolicy {
		t.Fatalf("reason = %s", r)
	}
	// A failed pod that already lost its finalizer still decides it.
	d = decide(t, Input{Job: job, Pods: []*corev1.Pod{newPod("a", noFinalizer, exited(map[string]int32{"c": 42}))}})
	if !hasCond(d.Status, batchv1.JobFailureTarget) {
		t.Fatalf("conditions = %+v", d.Status.Conditions)
	}
}

func TestPodFailurePolicyIgnore(t *testing.T) {
	job := policyJob(onExit(batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyOnExitCodesOpIn, 5))
	job.Spec.BackoffLimit = ptr.To[int32](0)
	job.Spec.Parallelism = ptr.To[int32](1)
	c := newCluster(t, job)
	c.step()
	c.run()
	c.exit("job-0", 5)
	d := c.step()
	// Ignored: not counted, released at once, no failure verdict; but the
	// pod-failure backoff still grows.
	if hasCond(d.Status, batchv1.JobFailureTarget) || len(d.Status.UncountedTerminatedPods.Failed) != 0 || d.Status.Failed != 0 {
		t.Fatalf("status = %+v", d.Status)
	}
	if got := names(d.RemoveFinalizers); !slices.Equal(got, []string{"job-0"}) {
		t.Fatalf("remove finalizers = %v", got)
	}
	if d.Backoff.FailuresAfterLastSuccess != 1 || len(d.Create) != 0 || d.RequeueAfter != PodFailureBackoff {
		t.Fatalf("backoff = %+v create = %v requeue = %v", d.Backoff, d.Create, d.RequeueAfter)
	}
	c.now = c.now.Add(PodFailureBackoff)
	d = c.step()
	if !slices.Equal(d.Create, []int{-1}) {
		t.Fatalf("create = %v", d.Create)
	}
	if c.job.Status.Failed != 0 {
		t.Fatalf("failed = %d", c.job.Status.Failed)
	}
	// A failure no rule matches counts, and backoffLimit 0 ends the Job.
	c.run()
	c.exit("job-1", 1)
	c.settle()
	st := c.job.Status
	if f := findCondition(st.Conditions, batchv1.JobFailed); f == nil || f.Reason != batchv1.JobReasonBackoffLimitExceeded || st.Failed != 1 {
		t.Fatalf("status = %+v", st)
	}
}

func TestPodFailurePolicyCountAndDisruption(t *testing.T) {
	job := policyJob(
		onCondition(batchv1.PodFailurePolicyActionIgnore, corev1.DisruptionTarget),
		onExit(batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyOnExitCodesOpNotIn, 0))
	started(job)
	job.Spec.BackoffLimit = ptr.To[int32](1)
	pods := []*corev1.Pod{
		newPod("evicted", exited(map[string]int32{"c": 137}), podCondition(corev1.DisruptionTarget)),
		newPod("crashed", exited(map[string]int32{"c": 2})),
	}
	d := decide(t, Input{Job: job, Pods: pods})
	if got := d.Status.UncountedTerminatedPods.Failed; !slices.Equal(got, []types.UID{"uid-crashed"}) {
		t.Fatalf("uncounted failed = %v", got)
	}
	if hasCond(d.Status, batchv1.JobFailureTarget) {
		t.Fatal("one counted failure is within backoffLimit 1")
	}
	if d.Backoff.FailuresAfterLastSuccess != 2 {
		t.Fatalf("both failures lengthen the backoff: %+v", d.Backoff)
	}
}

func TestPodFailurePolicyTerminatingPods(t *testing.T) {
	// With a policy only failed pods are replaced, and a pod being deleted
	// is neither a failure nor replaced until it reaches a terminal phase.
	job := policyJob(onExit(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, 42))
	job.Spec.PodReplacementPolicy = nil
	started(job)
	d := decide(t, Input{Job: job, Pods: []*corev1.Pod{newPod("a"), newPod("b", deleting)}})
	if len(d.Create) != 0 || *d.Status.Terminating != 1 || len(d.Status.UncountedTerminatedPods.Failed) != 0 || len(d.RemoveFinalizers) != 0 {
		t.Fatalf("decision = %+v", d)
	}
	// A FailJob verdict waits for the terminating pod before Failed.
	job.Status.Conditions = []batchv1.JobCondition{*newCondition(batchv1.JobFailureTarget, batchv1.JobReasonPodFailurePolicy, "m", t0)}
	d = decide(t, Input{Job: job, Pods: []*corev1.Pod{newPod("b", deleting)}})
	if hasCond(d.Status, batchv1.JobFailed) {
		t.Fatal("Failed while a pod terminates")
	}
	if got := d.Status.UncountedTerminatedPods.Failed; !slices.Equal(got, []types.UID{"uid-b"}) {
		t.Fatalf("a pod stopped for the failure counts: %v", got)
	}
}

// --- backoffLimitPerIndex -----------------------------------------------------

func perIndexJob(limit int32, mut ...func(*batchv1.Job)) *batchv1.Job {
	j := newJob(indexed, func(j *batchv1.Job) {
		j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](3)
		j.Spec.BackoffLimitPerIndex = ptr.To(limit)
		j.Spec.BackoffLimit = ptr.To[int32](1 << 30)
	})
	for _, m := range mut {
		m(j)
	}
	return j
}

func podOf(c *cluster, ix int) *corev1.Pod {
	var last *corev1.Pod
	for _, p := range c.pods {
		if completionIndex(p) == ix && (last == nil || earlier(last, p)) {
			last = p
		}
	}
	return last
}

func TestBackoffLimitPerIndexSequence(t *testing.T) {
	for _, plain := range []bool{false, true} {
		name := "Decision.PodFor"
		if plain {
			name = "PodFor without counts"
		}
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, perIndexJob(1))
			c.plainPodFor = plain
			d := c.step()
			if !slices.Equal(d.Create, []int{0, 1, 2}) || ptr.Deref(d.Status.FailedIndexes, "x") != "" {
				t.Fatalf("create = %v failedIndexes = %v", d.Create, d.Status.FailedIndexes)
			}
			c.run()
			first := podOf(c, 1).Name
			c.exit(first, 3)
			c.exit(podOf(c, 0).Name, 0)
			d = c.step()
			// Index 1 has a failure left: its pod keeps the finalizer and is
			// not yet recorded; the replacement waits for the index backoff.
			if slices.Contains(names(d.RemoveFinalizers), first) || len(d.Status.UncountedTerminatedPods.Failed) != 0 {
				t.Fatalf("delayed pod released: %v %+v", names(d.RemoveFinalizers), d.Status.UncountedTerminatedPods)
			}
			if len(d.Create) != 0 || d.RequeueAfter != PodFailureBackoff || d.Status.CompletedIndexes != "0" {
				t.Fatalf("create = %v requeue = %v status = %+v", d.Create, d.RequeueAfter, d.Status)
			}
			c.now = c.now.Add(PodFailureBackoff)
			d = c.step()
			if !slices.Equal(d.Create, []int{1}) || d.IndexFailures[1] != (IndexFailures{Failed: 1}) {
				t.Fatalf("create = %v failures = %v", d.Create, d.IndexFailures)
			}
			second := podOf(c, 1)
			want := "1"
			if plain {
				want = "0"
			}
			if got := second.Annotations[batchv1.JobIndexFailureCountAnnotation]; got != want {
				t.Fatalf("replacement failure count = %q", got)
			}
			// With the replacement there, the first pod is accounted for.
			d = c.step()
			if got := d.Status.UncountedTerminatedPods.Failed; !slices.Equal(got, []types.UID{types.UID("uid-" + first)}) {
				t.Fatalf("uncounted failed = %v", got)
			}
			c.run()
			c.exit(second.Name, 3)
			d = c.step()
			if ptr.Deref(d.Status.FailedIndexes, "") != "1" || len(d.Create) != 0 {
				t.Fatalf("failedIndexes = %v create = %v", d.Status.FailedIndexes, d.Create)
			}
			c.exit(podOf(c, 2).Name, 0)
			c.settle()
			st := c.job.Status
			f := findCondition(st.Conditions, batchv1.JobFailed)
			if f == nil || f.Reason != batchv1.JobReasonFailedIndexes || f.Message != msgFailedIndexes {
				t.Fatalf("conditions = %+v", st.Conditions)
			}
			if st.Failed != 2 || st.Succeeded != 2 || st.CompletedIndexes != "0,2" || *st.FailedIndexes != "1" || st.CompletionTime != nil {
				t.Fatalf("status = %+v", st)
			}
			for _, p := range c.pods {
				if hasFinalizer(p) {
					t.Errorf("%s keeps the finalizer", p.Name)
				}
			}
		})
	}
}

func TestMaxFailedIndexes(t *testing.T) {
	c := newCluster(t, perIndexJob(0, func(j *batchv1.Job) { j.Spec.MaxFailedIndexes = ptr.To[int32](0) }))
	c.step()
	c.run()
	c.exit(podOf(c, 2).Name, 1)
	d := c.step()
	ft := findCondition(d.Status.Conditions, batchv1.JobFailureTarget)
	if ft == nil || ft.Reason != batchv1.JobReasonMaxFailedIndexesExceeded || ft.Message != msgMaxFailedIndexes || *d.Status.FailedIndexes != "2" {
		t.Fatalf("status = %+v", d.Status)
	}
	if len(d.Delete) != 2 {
		t.Fatalf("delete = %v", names(d.Delete))
	}
	c.kubeletStops()
	c.settle()
	st := c.job.Status
	if !hasCond(&st, batchv1.JobFailed) || st.Failed != 3 || *st.FailedIndexes != "2" {
		t.Fatalf("status = %+v", st)
	}
}

func TestFailIndexRule(t *testing.T) {
	job := perIndexJob(5, withPolicy(onExit(batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyOnExitCodesOpIn, 7)),
		func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed) })
	c := newCluster(t, job)
	c.step()
	c.run()
	c.exit(podOf(c, 0).Name, 7)
	c.exit(podOf(c, 1).Name, 0)
	d := c.step()
	if *d.Status.FailedIndexes != "0" || len(d.Create) != 0 || !slices.Equal(d.Status.UncountedTerminatedPods.Failed, []types.UID{"uid-job-0-0"}) {
		t.Fatalf("decision = %+v status = %+v", d, d.Status)
	}
	c.exit(podOf(c, 2).Name, 0)
	c.settle()
	if f := findCondition(c.job.Status.Conditions, batchv1.JobFailed); f == nil || f.Reason != batchv1.JobReasonFailedIndexes {
		t.Fatalf("status = %+v", c.job.Status)
	}
}

func TestPerIndexIgnoredFailuresAndBackoff(t *testing.T) {
	job := perIndexJob(1, withPolicy(onExit(batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyOnExitCodesOpIn, 5)),
		func(j *batchv1.Job) {
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
			j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](1), ptr.To[int32](1)
		})
	c := newCluster(t, job)
	c.step()
	c.run()
	c.exit("job-0-0", 5)
	d := c.step()
	if d.RequeueAfter != PodFailureBackoff || len(d.Create) != 0 {
		t.Fatalf("create = %v requeue = %v", d.Create, d.RequeueAfter)
	}
	c.now = c.now.Add(PodFailureBackoff)
	d = c.step()
	if d.IndexFailures[0] != (IndexFailures{Ignored: 1}) {
		t.Fatalf("failures = %v", d.IndexFailures)
	}
	p := podOf(c, 0)
	if p.Annotations[batchv1.JobIndexFailureCountAnnotation] != "0" || p.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] != "1" {
		t.Fatalf("annotations = %v", p.Annotations)
	}
	// The second failure (ignored again) waits twice as long: the index
	// backoff counts ignored failures too.
	c.step()
	c.run()
	c.exit(p.Name, 5)
	d = c.step()
	if d.RequeueAfter != 2*PodFailureBackoff || len(d.Create) != 0 {
		t.Fatalf("create = %v requeue = %v", d.Create, d.RequeueAfter)
	}
	c.now = c.now.Add(2 * PodFailureBackoff)
	d = c.step()
	if d.IndexFailures[0] != (IndexFailures{Ignored: 2}) || ptr.Deref(c.job.Status.FailedIndexes, "x") != "" || c.job.Status.Failed != 0 {
		t.Fatalf("failures = %v status = %+v", d.IndexFailures, c.job.Status)
	}
}

func TestPerIndexBackoffIgnoresGlobalRecord(t *testing.T) {
	// Index 0 failed just now; index 1 has no failures and is created at
	// once although the Job's record holds many failures.
	job := perIndexJob(3, started, func(j *batchv1.Job) { j.Spec.Completions = ptr.To[int32](2) })
	failed := newPod("f", index(0), phase(corev1.PodFailed), finishedAt(t0))
	d := decide(t, Input{Job: job, Pods: []*corev1.Pod{failed}, Backoff: Backoff{FailuresAfterLastSuccess: 20, LastFailure: t0}})
	if !slices.Equal(d.Create, []int{1}) {
		t.Fatalf("create = %v", d.Create)
	}
	if d.RequeueAfter != PodFailureBackoff {
		t.Fatalf("index 0 waits: requeue = %v", d.RequeueAfter)
	}
	// Annotated history: three failures behind index 0 means a 40s wait
	// from its finish, a minute ago, so none left; and the replacement
	// carries 4 (= backoffLimitPerIndex + 1 would fail the index: 3 ≥ 3
	// already does, see failsIndex).
	hist := newPod("h", index(0), exited(map[string]int32{"c": 1}), func(p *corev1.Pod) {
		p.Annotations[batchv1.JobIndexFailureCountAnnotation] = "2"
	})
	d = decide(t, Input{Job: job, Pods: []*corev1.Pod{hist}})
	if !slices.Equal(d.Create, []int{0, 1}) || d.IndexFailures[0] != (IndexFailures{Failed: 3}) {
		t.Fatalf("create = %v failures = %v", d.Create, d.IndexFailures)
	}
}

func TestAnnotatedFailures(t *testing.T) {
	cases := map[string]IndexFailures{"3": {Failed: 3}, "-1": {}, "x": {}, "4294967296": {}, "": {}}
	for v, want := range cases {
		p := newPod("p", func(p *corev1.Pod) {
			p.Annotations = map[string]string{batchv1.JobIndexFailureCountAnnotation: v}
		})
		if got := annotatedFailures(p); got != want {
			t.Errorf("%q: %+v", v, got)
		}
	}
}

func TestPodForIndex(t *testing.T) {
	job := perIndexJob(2)
	p := PodForIndex(job, 1, 2, 0)
	if p.Annotations[batchv1.JobIndexFailureCountAnnotation] != "2" {
		t.Fatalf("annotations = %v", p.Annotations)
	}
	if _, ok := p.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation]; ok {
		t.Fatal("ignored count written as 0")
	}
	p = PodForIndex(job, 1, 0, 4)
	if p.Annotations[batchv1.JobIndexFailureCountAnnotation] != "0" || p.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] != "4" {
		t.Fatalf("annotations = %v", p.Annotations)
	}
	if PodFor(job, 1).Annotations[batchv1.JobIndexFailureCountAnnotation] != "0" {
		t.Fatal("PodFor changed")
	}
	d := Decision{IndexFailures: map[int]IndexFailures{2: {Failed: 1}}}
	if d.PodFor(job, 2).Annotations[batchv1.JobIndexFailureCountAnnotation] != "1" || d.PodFor(job, 0).Annotations[batchv1.JobIndexFailureCountAnnotation] != "0" {
		t.Fatal("Decision.PodFor")
	}
	// Without backoffLimitPerIndex no counts are written.
	if _, ok := PodForIndex(newJob(indexed), 0, 3, 3).Annotations[batchv1.JobIndexFailureCountAnnotation]; ok {
		t.Fatal("counts on a Job without backoffLimitPerIndex")
	}
	if job.Spec.Template.Annotations != nil {
		t.Fatal("template modified")
	}
}

// --- successPolicy ------------------------------------------------------------

func TestSuccessPolicyMet(t *testing.T) {
	rule := func(ixs string, count int32) batchv1.SuccessPolicyRule {
		var r batchv1.SuccessPolicyRule
		if ixs != "" {
			r.SucceededIndexes = ptr.To(ixs)
		}
		if count > 0 {
			r.SucceededCount = ptr.To(count)
		}
		return r
	}
	cases := []struct {
		name  string
		rules []batchv1.SuccessPolicyRule
		done  string
		want  string
	}{
		{"nothing done", []batchv1.SuccessPolicyRule{rule("", 1)}, "", ""},
		{"indexes all done", []batchv1.SuccessPolicyRule{rule("0,2-3", 0)}, "0-3", "Matched rules at index 0"},
		{"indexes partly done", []batchv1.SuccessPolicyRule{rule("0,2-3", 0)}, "0,1,3", ""},
		{"indexes with count", []batchv1.SuccessPolicyRule{rule("1-4", 2)}, "0,2,4", "Matched rules at index 0"},
		{"indexes with count short", []batchv1.SuccessPolicyRule{rule("1-4", 3)}, "0,2,4", ""},
		{"count alone", []batchv1.SuccessPolicyRule{rule("3", 0), rule("", 2)}, "0,5", "Matched rules at index 1"},
		{"out of range rule skipped", []batchv1.SuccessPolicyRule{rule("9", 0), rule("0", 0)}, "0", "Matched rules at index 1"},
		{"first matching rule named", []batchv1.SuccessPolicyRule{rule("5", 0), rule("0", 0), rule("", 1)}, "0", "Matched rules at index 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg, ok := successPolicyMet(&batchv1.SuccessPolicy{Rules: tc.rules}, parseIndexSet(tc.done, 6), 6)
			if msg != tc.want || ok != (tc.want != "") {
				t.Errorf("got %q %v, want %q", msg, ok, tc.want)
			}
		})
	}
	if _, ok := successPolicyMet(nil, parseIndexSet("0", 6), 6); ok {
		t.Error("nil policy met")
	}
	if got := parseIndexSet("0-9", 20).overlap(parseIndexSet("3,5-12,15", 20)); got != 6 {
		t.Errorf("overlap = %d", got)
	}
}

func TestSuccessPolicySequence(t *testing.T) {
	job := newJob(indexed, func(j *batchv1.Job) {
		j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](4), ptr.To[int32](4)
		j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
	})
	c := newCluster(t, job)
	c.step()
	c.run()
	c.exit(podOf(c, 1).Name, 1) // a failure before success is still counted
	c.exit(podOf(c, 0).Name, 0)
	d := c.step()
	scm := findCondition(d.Status.Conditions, batchv1.JobSuccessCriteriaMet)
	if scm == nil || scm.Reason != batchv1.JobReasonSuccessPolicy || scm.Message != "Matched rules at index 0" || hasCond(d.Status, batchv1.JobComplete) {
		t.Fatalf("conditions = %+v", d.Status.Conditions)
	}
	if got := names(d.Delete); len(got) != 2 || len(d.Create) != 0 {
		t.Fatalf("delete = %v create = %v", got, d.Create)
	}
	// Pods stopped because the Job succeeded are not failures.
	for _, p := range d.Delete {
		if !slices.Contains(d.RemoveFinalizers, p) {
			t.Errorf("%s keeps the finalizer", p.Name)
		}
	}
	c.step()
	if hasCond(&c.job.Status, batchv1.JobComplete) {
		t.Fatal("Complete while pods terminate")
	}
	c.kubeletStops()
	c.settle()
	st := c.job.Status
	cp := findCondition(st.Conditions, batchv1.JobComplete)
	if cp == nil || cp.Reason != batchv1.JobReasonSuccessPolicy || st.CompletionTime == nil {
		t.Fatalf("conditions = %+v", st.Conditions)
	}
	if st.Succeeded != 1 || st.Failed != 1 || st.CompletedIndexes != "0" || st.Active != 0 || *st.Terminating != 0 {
		t.Fatalf("status = %+v", st)
	}
	if !slices.Contains(c.events, Event{corev1.EventTypeNormal, eventCompleted, "Job completed"}) {
		t.Errorf("events = %v", c.events)
	}
}

func TestSuccessPolicyNotBeforeFailure(t *testing.T) {
	// A failure verdict reached in the same sync wins over the policy.
	job := newJob(indexed, started, func(j *batchv1.Job) {
		j.Spec.BackoffLimit = ptr.To[int32](0)
		j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](1)}}}
	})
	d := decide(t, Input{Job: job, Pods: []*corev1.Pod{
		newPod("a", index(0), phase(corev1.PodSucceeded)), newPod("b", index(1), phase(corev1.PodFailed))}})
	if !hasCond(d.Status, batchv1.JobFailureTarget) || hasCond(d.Status, batchv1.JobSuccessCriteriaMet) {
		t.Fatalf("conditions = %+v", d.Status.Conditions)
	}
}

func TestValidateNewRules(t *testing.T) {
	start := ptr.To(metav1.NewTime(t0))
	job := perIndexJob(1)
	bad := map[string]batchv1.JobStatus{
		"overlap":        {CompletedIndexes: "0,1", FailedIndexes: ptr.To("1")},
		"out of range":   {FailedIndexes: ptr.To("3")},
		"policy reason":  {StartTime: start, Conditions: []batchv1.JobCondition{*newCondition(batchv1.JobFailureTarget, batchv1.JobReasonPodFailurePolicy, "m", t0)}},
		"success reason": {StartTime: start, Conditions: []batchv1.JobCondition{*newCondition(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonSuccessPolicy, "m", t0)}},
	}
	for name, st := range bad {
		if validateForJob(job, &st) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if validateForJob(newJob(indexed), &batchv1.JobStatus{FailedIndexes: ptr.To("")}) == nil {
		t.Error("failedIndexes without backoffLimitPerIndex accepted")
	}
	shrunk := perIndexJob(1, func(j *batchv1.Job) { j.Status.FailedIndexes = ptr.To("0,2") })
	if validateForJob(shrunk, &batchv1.JobStatus{FailedIndexes: ptr.To("2")}) == nil {
		t.Error("failed index dropped")
	}
	ft := *newCondition(batchv1.JobFailureTarget, batchv1.JobReasonFailedIndexes, "m", t0)
	mismatch := *newCondition(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, "m", t0)
	if validate(&batchv1.JobStatus{}, &batchv1.JobStatus{StartTime: start, Conditions: []batchv1.JobCondition{ft, mismatch}}) == nil {
		t.Error("Failed with another reason than FailureTarget accepted")
	}
	good := batchv1.JobStatus{StartTime: start, Conditions: []batchv1.JobCondition{ft, *newCondition(batchv1.JobFailed, batchv1.JobReasonFailedIndexes, "m", t0)}}
	if err := validate(&batchv1.JobStatus{}, &good); err != nil {
		t.Errorf("valid status rejected: %v", err)
	}
}
