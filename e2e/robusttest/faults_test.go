package robusttest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/kit"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// The API faults of issue 24: a Job that did nothing wrong must outlast them. Before, the
// Job controller gave a failing request 15 retries (5 ms doubling: about 164 s in all) and
// then terminated the Job, whatever the error.
const (
	// webhookOutage is how long pod creates fail with 500 "failed calling webhook": longer
	// than the old give-up (164 s) by more than the transient backoff's cap (1 min), so that
	// the old rule would certainly have terminated every Job.
	webhookOutage = 5 * time.Minute
	// quotaOutage is how long a ResourceQuota refuses every pod: past the old give-up too.
	quotaOutage = 3 * time.Minute
	// healed bounds a Job's run once the fault ends: a retry within the backoff's cap
	// (1 min), the gang admitted, pods that run 5 s; generous for a shared, loaded machine.
	healed = 4 * time.Minute
	// faultJobs Volcano Jobs of 2 pods and faultBatchJobs batch/v1 Jobs of 2 completions
	// wait out each fault side by side.
	faultJobs, faultBatchJobs, podsPerJob = 3, 2, 2
)

func init() {
	register(Case{Name: "webhook-outage", Run: func(t *testing.T, w *world) {
		runFault(t, w, "webhook-outage", webhookOutage, refuseByWebhook)
	}})
	register(Case{Name: "quota-full", Run: func(t *testing.T, w *world) {
		runFault(t, w, "quota-full", quotaOutage, refuseByQuota)
	}})
}

// A fault makes every pod create in ns fail until the returned heal is called.
type fault func(t *testing.T, w *world, ns string) (heal func())

// runFault starts a fault in a namespace of its own, creates Volcano and batch/v1 Jobs that
// cannot create a pod while it lasts, heals it after outage and audits: every Job completes,
// none ever terminated or failed, each told in a Waiting Event why it waited, no pod created
// twice, and no pod at all while the fault lasted (the fault was real).
func runFault(t *testing.T, w *world, prefix string, outage time.Duration, start fault) {
	ns := vcjob.Namespace(t, w.kube, prefix)
	creations := stack.WatchPodCreations(t, w.kube, ns)
	bad := watchBadPhases(t, w, ns)
	heal := start(t, w, ns)
	healedOnce := sync.OnceFunc(heal)
	t.Cleanup(healedOnce) // a failed case must not leave its fault behind
	began := time.Now()

	var vcNames, batchNames []string
	for i := range faultJobs {
		job := vcjob.New(ns, fmt.Sprintf("vc-%d", i), vcjob.Task("w", podsPerJob, "5s", ""))
		vcjob.Create(t, w.volcano, job)
		vcNames = append(vcNames, job.Name)
	}
	for i := range faultBatchJobs {
		job := managedBatchJob(ns, fmt.Sprintf("b-%d", i))
		if _, err := w.kube.BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create batch Job %s: %v", job.Name, err)
		}
		batchNames = append(batchNames, job.Name)
	}
	all := slices.Concat(vcNames, batchNames)

	// Within the first minute each Job says why it waits (its first create fails at once).
	stack.WaitFor(t, "every Job has a Waiting Event", 2*time.Minute, func() (bool, string) {
		var without []string
		for _, name := range all {
			if len(events(w, ns, name, kit.EventWaiting)) == 0 {
				without = append(without, name)
			}
		}
		return len(without) == 0, fmt.Sprintf("no Waiting Event yet for %v", without)
	})
	t.Logf("Waiting Event of %s: %s", vcNames[0], events(w, ns, vcNames[0], kit.EventWaiting)[0])

	if rest := outage - time.Since(began); rest > 0 {
		time.Sleep(rest)
	}
	if _, total := creations.Twice(); total != 0 {
		t.Fatalf("%d pods were created while every pod create was refused: the fault did not hold", total)
	}
	for _, name := range vcNames { // the Job keeps its phase while it waits
		job, err := w.volcano.BatchV1alpha1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p := job.Status.State.Phase; p != batch.Pending && p != "" {
			t.Errorf("Job %s is %s after %v of refused pod creates, want it still Pending", name, p, outage)
		}
	}
	healedOnce()
	healedAt := time.Now()
	t.Logf("fault healed after %v", healedAt.Sub(began).Round(time.Second))

	stack.WaitFor(t, "every Job completes once the fault is healed", healed, func() (bool, string) {
		var waiting []string
		for _, name := range vcNames {
			job, err := w.volcano.BatchV1alpha1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil || job.Status.State.Phase != batch.Completed {
				waiting = append(waiting, fmt.Sprintf("%s:%v", name, phaseOf(job, err)))
			}
		}
		for _, name := range batchNames {
			job, err := w.kube.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil || !hasCondition(job, batchv1.JobComplete) {
				waiting = append(waiting, name)
			}
		}
		return len(waiting) == 0, fmt.Sprintf("not done: %v", waiting)
	})
	t.Logf("all %d Jobs complete %v after the fault was healed", len(all), time.Since(healedAt).Round(time.Second))

	if phases := bad.seen(); len(phases) > 0 {
		t.Errorf("Jobs went through phases a healthy Job never does: %v", phases)
	}
	for _, name := range batchNames {
		job, err := w.kube.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && hasCondition(job, batchv1.JobFailed) {
			t.Errorf("batch Job %s failed", name)
		}
	}
	told := 0
	for _, name := range all {
		told += len(events(w, ns, name, kit.EventWaiting))
		if got := events(w, ns, name, "RetryLimitReached"); len(got) > 0 {
			t.Errorf("Job %s was given up on: %v", name, got)
		}
		// Told once per wait story: a story may be told again when its reason changes or
		// the Job's slot moves, not on each of the retries (5 or more per Job here).
		if got := events(w, ns, name, kit.EventWaiting); len(got) > 3 {
			t.Errorf("Job %s has %d Waiting Events, want one per wait story:\n%s", name, len(got), strings.Join(got, "\n"))
		}
	}
	t.Logf("%d Waiting Events for %d Jobs", told, len(all))
	twice, total := creations.Twice()
	if len(twice) > 0 {
		t.Errorf("pods created twice: %v", twice)
	}
	if want := (faultJobs + faultBatchJobs) * podsPerJob; total != want {
		t.Errorf("%d pods created, want %d: one per replica and completion", total, want)
	}
}

// refuseByWebhook registers a validating webhook on pod creates in ns only, failing closed,
// whose URL is a loopback port where nothing listens: the API server answers each create
// with 500 InternalError "failed calling webhook", as in an outage of a real admission
// webhook. Deleting the configuration heals it.
func refuseByWebhook(t *testing.T, w *world, ns string) func() {
	port, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	hooks := w.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	cfg := &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "robusttest-" + ns},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name: "refuse.robusttest.ringfire.io",
			ClientConfig: admissionv1.WebhookClientConfig{
				URL: ptr.To(fmt.Sprintf("https://127.0.0.1:%d/validate", port)),
			},
			Rules: []admissionv1.RuleWithOperations{{
				Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			FailurePolicy:           ptr.To(admissionv1.Fail),
			SideEffects:             ptr.To(admissionv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](5),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := hooks.Create(context.Background(), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	heal := func() {
		err := hooks.Delete(context.Background(), cfg.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete webhook %s: %v", cfg.Name, err)
		}
	}
	awaitRefusal(t, w, ns, "failed calling webhook", apierrors.IsInternalError)
	return heal
}

// refuseByQuota gives ns a ResourceQuota of 0 pods: each create is refused with 403
// "exceeded quota". Raising the quota heals it.
func refuseByQuota(t *testing.T, w *world, ns string) func() {
	quotas := w.kube.CoreV1().ResourceQuotas(ns)
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
	}
	if _, err := quotas.Create(context.Background(), q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	heal := func() {
		got, err := quotas.Get(context.Background(), q.Name, metav1.GetOptions{})
		if err == nil {
			got.Spec.Hard[corev1.ResourcePods] = resource.MustParse("100")
			_, err = quotas.Update(context.Background(), got, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Errorf("raise quota: %v", err)
		}
	}
	awaitRefusal(t, w, ns, "exceeded quota", apierrors.IsForbidden)
	return heal
}

// awaitRefusal waits until a dry-run pod create in ns is refused as the fault refuses, so
// that no Job's pod slips through before the API server applies it.
func awaitRefusal(t *testing.T, w *world, ns, message string, is func(error) bool) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec:       vcjob.PodSpec(vcjob.CPU, vcjob.Memory),
	}
	var last error
	stack.WaitFor(t, "the fault to refuse pod creates", time.Minute, func() (bool, string) {
		_, last = w.kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last != nil && is(last) && strings.Contains(last.Error(), message), fmt.Sprint(last)
	})
	t.Logf("pod creates refused: %v", last)
}

// managedBatchJob is a batch/v1 Job for ringfire of podsPerJob completions, 2 at a time,
// whose pods run 5 s.
func managedBatchJob(ns, name string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			ManagedBy:   ptr.To(cache.BatchJobManager),
			Completions: ptr.To[int32](podsPerJob), Parallelism: ptr.To[int32](podsPerJob),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: vcjob.Runs("5s", "")},
				Spec:       vcjob.PodSpec(vcjob.CPU, vcjob.Memory),
			},
		},
	}
}

// badPhases records the phases of ns's Volcano Jobs that a Job which only waited never
// reaches.
type badPhases struct {
	mu  sync.Mutex
	got []string
}

func watchBadPhases(t *testing.T, w *world, ns string) *badPhases {
	b := &badPhases{}
	stack.WatchJobs(t, w.volcano, ns, func(_ watch.EventType, job *batch.Job) {
		switch p := job.Status.State.Phase; p {
		case batch.Terminating, batch.Terminated, batch.Aborting, batch.Aborted, batch.Failed:
			b.mu.Lock()
			defer b.mu.Unlock()
			b.got = append(b.got, job.Name+":"+string(p))
		}
	})
	return b
}

func (b *badPhases) seen() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Compact(slices.Clone(b.got))
}

// events returns the messages of the Events of ns's object name with the reason
// (stack.Events).
func events(w *world, ns, name, reason string) []string {
	return stack.Events(w.kube, ns, name, reason)
}

func hasCondition(job *batchv1.Job, kind batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == kind && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func phaseOf(job *batch.Job, err error) string {
	if err != nil {
		return err.Error()
	}
	return string(job.Status.State.Phase)
}
