package crds_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/controllers/queue"
	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
)

// BenchmarkAdmission times what the Queue rules and the admission policies add to a request, on
// a real API server holding 2,000 queues: a dry-run Job create with no labelled queue and with
// 100 (50 not open, 50 with children), a dry-run queue create, and a label patch of a queue (the
// Queue controller's write). docs/jobs.md, "Admission policies", has the results.
//
//	RINGFIRE_E2E=1 go test -run '^$' -bench Admission -benchtime 200x ./deploy/crds/
func BenchmarkAdmission(b *testing.B) {
	c := cluster.StartForTest(b, cluster.Options{Nodes: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := crds.Install(ctx, c.RESTConfig()); err != nil {
		b.Fatal(err)
	}
	cfg := c.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 1000
	vc := versioned.NewForConfigOrDie(cfg)
	const queues, labelled = 2000, 100
	for i := range queues {
		q := &schedulingv1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("q-%04d", i)}, Spec: schedulingv1beta1.QueueSpec{Weight: 1}}
		if _, err := vc.SchedulingV1beta1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	jobCreate := func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			job := validJob(fmt.Sprintf("bench-%d", i))
			job.Spec.Queue = "q-1999"
			if _, err := vc.BatchV1alpha1().Jobs(namespace).Create(ctx, job, dryRun); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("job create, no labelled queue", jobCreate)
	b.Run("queue create", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			q := &schedulingv1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("new-%d", i)}, Spec: schedulingv1beta1.QueueSpec{Weight: 1, Parent: "q-0001"}}
			if _, err := vc.SchedulingV1beta1().Queues().Create(ctx, q, dryRun); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("queue label patch", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			patch := fmt.Sprintf(`{"metadata":{"labels":{"bench":"%d"}}}`, i)
			if _, err := vc.SchedulingV1beta1().Queues().Patch(ctx, "q-0002", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for i := range labelled {
		key := queue.NotOpenLabel
		if i%2 == 1 {
			key = queue.HasChildrenLabel
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, key)
		if _, err := vc.SchedulingV1beta1().Queues().Patch(ctx, fmt.Sprintf("q-%04d", 100+i), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // the API server's caches of the labelled queues
	b.Run(fmt.Sprintf("job create, %d labelled queues", labelled), jobCreate)
}
