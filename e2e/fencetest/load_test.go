package fencetest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"
)

// createJobs creates the Jobs one every interval, so that the load is
// spread over time rather than a single burst.
func createJobs(t *testing.T, vc vcclient.Interface, jobs []*batch.Job, interval time.Duration) {
	t.Helper()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for _, job := range jobs {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := vc.BatchV1alpha1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
		cancel()
		if err != nil {
			t.Fatalf("create job %s: %v", job.Name, err)
		}
		<-tick.C
	}
}

// waitFinished waits until every Job named in names is in a final phase, or
// limit passes, and returns the phase of each.
func waitFinished(t *testing.T, vc vcclient.Interface, names []string, limit time.Duration) map[string]batch.JobPhase {
	t.Helper()
	final := map[batch.JobPhase]bool{batch.Completed: true, batch.Failed: true, batch.Aborted: true, batch.Terminated: true}
	deadline := time.Now().Add(limit)
	phases := map[string]batch.JobPhase{}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		list, err := vc.BatchV1alpha1().Jobs(ns).List(ctx, metav1.ListOptions{})
		cancel()
		if err == nil {
			for _, j := range list.Items {
				phases[j.Name] = j.Status.State.Phase
			}
		}
		done := 0
		for _, name := range names {
			if final[phases[name]] {
				done++
			}
		}
		if done == len(names) || time.Now().After(deadline) {
			return phases
		}
		time.Sleep(time.Second)
	}
}

// countPhases prints how many of names are in each phase.
func countPhases(phases map[string]batch.JobPhase, names []string) string {
	counts := map[batch.JobPhase]int{}
	for _, name := range names {
		counts[phases[name]]++
	}
	var parts []string
	for p, n := range counts {
		parts = append(parts, fmt.Sprintf("%s %d", p, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
