package kit

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/go-hclog"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A wait is told once per story: when a key's retry failed too, and when its reason changes,
// not on each retry; a blip (one failure, then success) is not told; a success or a permanent
// error ends the story, and the next wait is told again. Every transient error is counted by
// reason.
func TestWaitsAreToldOncePerStory(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	quota := apierrors.NewForbidden(pods, "w-0", errors.New("exceeded quota: zero, requested: pods=1, used: pods=0, limited: pods=0"))
	webhook := apierrors.NewInternalError(errors.New(`failed calling webhook "x": connection refused`))
	invalid := apierrors.NewBadRequest("no")

	var told []string
	b := &Base[int]{Log: hclog.NewNullLogger(), waits: newWaits("test")}
	results := []error{}
	handler := b.watchWaits(func(context.Context, string, int) error {
		err := results[0]
		results = results[1:]
		return err
	}, func(key, reason string, err error) { told = append(told, key+" "+reason) })

	for _, step := range []struct {
		key string
		err error
	}{
		{"ns/a", quota}, {"ns/a", quota}, {"ns/a", fmt.Errorf("create pod: %w", quota)}, // one story, told at its 2nd
		{"ns/b", webhook}, // another key's: not told yet
		{"ns/a", webhook}, // a new reason: told
		{"ns/a", nil},     // healed
		{"ns/a", quota},   // a blip...
		{"ns/a", invalid}, // ...ended by a permanent error: never told
		{"ns/a", invalid},
		{"ns/a", quota},   // a blip...
		{"ns/a", nil},     // ...that passes: never told
		{"ns/b", webhook}, // b's retry failed too: told
		{"ns/b", webhook}, // same story
	} {
		results = append(results, step.err)
		_ = handler(context.Background(), step.key, 0)
	}
	want := []string{"ns/a quota", "ns/a server_error", "ns/b server_error"}
	if fmt.Sprint(told) != fmt.Sprint(want) {
		t.Errorf("told %v, want %v", told, want)
	}
	if n := b.waits.by.Len(); n != 1 {
		t.Errorf("%d keys waiting, want 1 (ns/b)", n)
	}
	for reason, want := range map[string]float64{ReasonQuota: 5, ReasonServerError: 4, ReasonTimeout: 0} {
		var m dto.Metric
		if err := b.waits.errors.WithLabelValues(reason).Write(&m); err != nil {
			t.Fatal(err)
		}
		if got := m.GetCounter().GetValue(); got != want {
			t.Errorf("transient errors of reason %s = %v, want %v", reason, got, want)
		}
	}

	// A reconcile cut short by the loss of its slot ends the key's wait without telling.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	results = append(results, context.Canceled)
	_ = handler(ctx, "ns/b", 0)
	if _, ok := b.waits.by.Get("ns/b"); ok {
		t.Error("ns/b still waits after its slot was lost")
	}
}
