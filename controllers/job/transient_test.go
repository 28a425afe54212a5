package job

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/state"
)

// Through the dispatcher: pod creates refused by a full ResourceQuota far more often than
// MaxRequeue allows never terminate the Job; it is told once why it waits, and its pod is
// made once the quota lets it.
func TestQuotaRefusalsNeverTerminateTheJob(t *testing.T) {
	const refusals = 8 // MaxRequeue is 2: Volcano's rule would have ended the Job at the 3rd
	job := testJob("q", task("w", 1))
	f := newFixture(t, func(cfg *Config) { cfg.MaxRequeue = 2 }, job)
	f.admit(t, job)
	var creates atomic.Int32
	created := make(chan struct{})
	f.kube.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		switch n := creates.Add(1); {
		case n <= refusals:
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "q-w-0",
				errors.New("exceeded quota: zero, requested: pods=1, used: pods=0, limited: pods=0"))
		case n == refusals+1:
			close(created)
		}
		return false, nil, nil // the fake's tracker creates it
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.c.Disp.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	f.c.Disp.Enqueue("ns/q", request{Request: state.Request{Event: bus.OutOfSyncEvent}})

	select {
	case <-created: // 8 waits of 5 ms doubling: about 1.3 s
	case <-time.After(20 * time.Second):
		t.Fatalf("no pod created after 20 s; %d creates tried, events %q", creates.Load(), f.recorded())
	}
	var waiting []string
	for _, e := range f.recorded() {
		switch {
		case strings.HasPrefix(e, "Warning Waiting"):
			waiting = append(waiting, e)
		case strings.Contains(e, "RetryLimitReached"), strings.Contains(e, "TerminateJob"),
			strings.Contains(e, "FailedCreatePod"):
			t.Errorf("unexpected event %q", e)
		}
	}
	if len(waiting) != 1 || !strings.Contains(waiting[0], "ResourceQuota") {
		t.Errorf("Waiting events %q, want one that names the quota", waiting)
	}
}

// The give-up Event counts the retries the dispatcher gave: the default 15 when
// MaxRequeue is not set (it said "(0 retries)").
func TestGiveUpSaysTheRetriesItGave(t *testing.T) {
	job := testJob("g", task("w", 1))
	f := newFixture(t, nil, job)
	f.c.giveUp("ns/g", request{Request: state.Request{Event: bus.OutOfSyncEvent}}, errors.New("invalid"))
	events := f.recorded()
	if len(events) == 0 || !strings.HasPrefix(events[0], corev1.EventTypeWarning+" RetryLimitReached") ||
		!strings.Contains(events[0], "(15 retries)") {
		t.Errorf("events %q, want a RetryLimitReached that says (15 retries)", events)
	}
}
