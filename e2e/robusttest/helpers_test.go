package robusttest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/e2e/stack"
)

// waitPhases waits until every named Job of ns is in phase, and fails the
// test after limit naming the Jobs that were not, with their phases.
func (w *world) waitPhases(t *testing.T, ns string, names []string, phase batch.JobPhase, limit time.Duration) {
	t.Helper()
	stack.WaitFor(t, fmt.Sprintf("%d Jobs of %s are %s", len(names), ns, phase), limit, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		list, err := w.volcano.BatchV1alpha1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		got := map[string]batch.JobPhase{}
		for _, j := range list.Items {
			got[j.Name] = j.Status.State.Phase
		}
		var off []string
		for _, n := range names {
			if got[n] != phase {
				off = append(off, fmt.Sprintf("%s=%q", n, got[n]))
			}
		}
		return len(off) == 0, strings.Join(off, " ")
	})
}
