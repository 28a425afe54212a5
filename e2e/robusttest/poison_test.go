package robusttest

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

func init() {
	register(Case{Name: "poison", Run: testPoison})
}

// smallJobs is how many ordinary Jobs go before and after the poison, and
// how long they may take to complete beside it: a loaded 2-core machine
// finishes them in seconds when nothing holds the ring up.
const (
	smallJobs     = 3
	smallJobLimit = 3 * time.Minute
)

// testPoison submits what once killed every replica in turn (a Job of one
// task of 2^31-1 replicas, one of 100,000, and a ReplicaSet whose
// group-min-member annotation asks for 2^31-1 pods) between ordinary Jobs:
// each poison is refused at admission with a message that says why, or is
// admitted and held with a Warning Event; the ordinary Jobs complete; no
// replica dies (the world's audit) and no pod is created twice.
func testPoison(t *testing.T, w *world) {
	ns := vcjob.Namespace(t, w.kube, "poison")
	pods := stack.WatchPodCreations(t, w.kube, ns)
	var small []string
	small = append(small, w.createSmallJobs(t, ns, "before")...)

	for _, p := range []struct {
		name     string
		replicas int32
	}{{"huge", math.MaxInt32}, {"large", 100000}} {
		job := vcjob.New(ns, p.name, vcjob.Task("worker", p.replicas, "1s", ""))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := w.volcano.BatchV1alpha1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
		cancel()
		switch {
		case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
			if !strings.Contains(err.Error(), "replicas") {
				t.Errorf("Job %s of %d replicas refused with a message that does not name replicas: %v", p.name, p.replicas, err)
			}
			t.Logf("Job %s of %d replicas refused at admission: %v", p.name, p.replicas, err)
		case err != nil:
			t.Fatalf("create Job %s: %v", p.name, err)
		default:
			ev := w.waitWarning(t, ns, "Job", p.name, time.Minute, "replicas")
			t.Logf("Job %s of %d replicas admitted and held: %s: %s", p.name, p.replicas, ev.Reason, ev.Message)
		}
	}
	w.createGreedyReplicaSet(t, ns, "greedy")

	small = append(small, w.createSmallJobs(t, ns, "after")...)
	start := time.Now()
	w.waitPhases(t, ns, small, batch.Completed, smallJobLimit)
	t.Logf("the %d ordinary Jobs beside the poison completed %v after the last was created", len(small), time.Since(start).Round(time.Millisecond))

	if twice, total := pods.Twice(); len(twice) > 0 {
		t.Errorf("%d of %d pods created twice: %v", len(twice), total, twice)
	}
	for _, name := range []string{"huge", "large"} {
		if n := vcjob.PodsOf(t, w.kube, ns, name); n > 0 {
			t.Errorf("the poison Job %s has %d pods", name, n)
		}
	}
}

// createSmallJobs creates smallJobs Jobs of 2 pods of 1 s named prefix-<i>.
func (w *world) createSmallJobs(t *testing.T, ns, prefix string) []string {
	t.Helper()
	var names []string
	for i := range smallJobs {
		job := vcjob.New(ns, fmt.Sprintf("%s-%d", prefix, i), vcjob.Task("worker", 2, "1s", ""))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := w.volcano.BatchV1alpha1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
		cancel()
		if err != nil {
			t.Fatalf("create Job %s: %v", job.Name, err)
		}
		names = append(names, job.Name)
	}
	return names
}

// createGreedyReplicaSet creates a ReplicaSet of one pod for the volcano
// scheduler whose group-min-member annotation asks for 2^31-1 pods: its
// PodGroup is built by ringfire's PodGroup controller from that number. The
// pod must be told why it waits (a Warning Event on the pod, its PodGroup
// or the ReplicaSet that names the annotation), or the ReplicaSet refused.
func (w *world) createGreedyReplicaSet(t *testing.T, ns, name string) {
	t.Helper()
	labels := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{
			scheduling.VolcanoGroupMinMemberAnnotationKey: fmt.Sprint(math.MaxInt32),
		}},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: vcjob.Runs("1h", "")},
				Spec:       vcjob.PodSpec(vcjob.CPU, vcjob.Memory),
			},
		},
	}
	rs.Spec.Template.Spec.SchedulerName = "volcano"
	rs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways // a ReplicaSet's pods must restart
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := w.kube.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			if !strings.Contains(err.Error(), "group-min-member") {
				t.Errorf("ReplicaSet %s refused with a message that does not name group-min-member: %v", name, err)
			}
			t.Logf("ReplicaSet %s refused at admission: %v", name, err)
			return
		}
		t.Fatalf("create ReplicaSet %s: %v", name, err)
	}
	stack.WaitFor(t, "a Warning Event that names the group-min-member annotation", time.Minute, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		list, err := w.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, ev := range list.Items {
			if ev.Type == corev1.EventTypeWarning && strings.Contains(ev.Message, "group-min-member") {
				t.Logf("ReplicaSet %s: %s %s: %s: %s", name, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Reason, ev.Message)
				return true, ""
			}
			seen = append(seen, ev.InvolvedObject.Kind+" "+ev.Reason)
		}
		return false, strings.Join(seen, ", ")
	})
}

// waitWarning waits for a Warning Event on the object whose message holds
// word, and returns it.
func (w *world) waitWarning(t *testing.T, ns, kind, name string, limit time.Duration, word string) corev1.Event {
	t.Helper()
	var found corev1.Event
	stack.WaitFor(t, fmt.Sprintf("a Warning Event on %s %s/%s that says %q", kind, ns, name, word), limit, func() (bool, string) {
		var seen []string
		for _, ev := range vcjob.EventsOn(t, w.kube, ns, kind, name) {
			if ev.Type == corev1.EventTypeWarning && strings.Contains(ev.Message, word) {
				found = ev
				return true, ""
			}
			seen = append(seen, ev.Reason+": "+ev.Message)
		}
		return false, strings.Join(seen, " | ")
	})
	return found
}
