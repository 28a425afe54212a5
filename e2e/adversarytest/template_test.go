package adversarytest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ringfire/ringfire/e2e/vcjob"
)

func init() {
	register(attack{name: "large-template", run: attackLargeTemplate})
}

// The large template: a Job of templateReplicas replicas, inside every
// replica limit, whose pod template carries templateLabelBytes of labels
// (each label as long as Kubernetes allows a label without a prefix).
const (
	templateReplicas   = 400
	templateLabelBytes = 1 << 20
	// tooLargeWait is how long the controller has to hold the Job with a
	// TooLarge Event.
	tooLargeWait = 2 * time.Minute
	// reasonTooLarge is the reason of the Event and status of a Job the
	// controller holds as too large (controllers/job/state).
	reasonTooLarge = "TooLarge"
)

// attackLargeTemplate submits the Job as the tenant. With ringfire's
// policies it is refused at admission; without them the controller holds it
// (TooLarge, in an Event) and makes no pod of it.
func attackLargeTemplate(t *testing.T, w *world) {
	ns := w.namespace(t, "template")
	task := vcjob.Task("worker", templateReplicas, "1h", "")
	task.Template.Labels = bigLabels(templateLabelBytes)
	job := vcjob.New(ns, "wide", task)
	w.aim("large-template", ns+"/"+job.Name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	_, err := w.tenant.volcano.BatchV1alpha1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
	cancel()
	switch {
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsRequestEntityTooLargeError(err):
		t.Logf("the Job of %d replicas with %d KiB of template labels refused at admission: %.300s", templateReplicas, templateLabelBytes>>10, err)
		return
	case err != nil:
		t.Fatalf("create Job %s: %v", job.Name, err)
	}
	if w.flavor.policies {
		t.Errorf("the Job of %d replicas with %d KiB of template labels was admitted beside ringfire's policies; want it refused", templateReplicas, templateLabelBytes>>10)
	}
	w.waitFor(t, "the Job is held as TooLarge", tooLargeWait, func() (bool, string) {
		var saw []string
		for _, ev := range vcjob.EventsOn(t, w.kube, ns, "Job", job.Name) {
			if ev.Reason == reasonTooLarge {
				t.Logf("the Job was held: %s: %.300s", ev.Reason, ev.Message)
				return true, ""
			}
			saw = append(saw, ev.Reason)
		}
		got, err := w.volcano.BatchV1alpha1().Jobs(ns).Get(context.Background(), job.Name, metav1.GetOptions{})
		if err == nil {
			saw = append(saw, fmt.Sprintf("phase %q reason %q", got.Status.State.Phase, got.Status.State.Reason))
		}
		return false, strings.Join(saw, ", ") + fmt.Sprintf("; %d pods", vcjob.PodsOf(t, w.kube, ns, job.Name))
	})
	// The status is written after the Event, its write coalesced (--status-coalesce).
	w.waitFor(t, "the held Job's status.state says "+reasonTooLarge, tooLargeWait, func() (bool, string) {
		got, err := w.volcano.BatchV1alpha1().Jobs(ns).Get(context.Background(), job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.State.Reason == reasonTooLarge, fmt.Sprintf("phase %q reason %q", got.Status.State.Phase, got.Status.State.Reason)
	})
	time.Sleep(2 * time.Second) // a pod made after the hold would show by now
	if n := vcjob.PodsOf(t, w.kube, ns, job.Name); n > 0 {
		t.Errorf("the held Job has %d pods, want none", n)
	}
}

// bigLabels returns labels of about n bytes: names and values of 63
// characters, the most a label without a prefix may have.
func bigLabels(n int) map[string]string {
	out := map[string]string{}
	value := strings.Repeat("v", 63)
	for i := 0; i*(63+63+6) < n; i++ {
		name := fmt.Sprintf("l%d-", i)
		out[name+strings.Repeat("k", 63-len(name))] = value
	}
	return out
}
