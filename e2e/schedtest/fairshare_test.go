package schedtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/e2e/stack"
)

// queuesShareByWeight: two queues of weights 3 and 1, each with a backlog
// of gangs of 2 × 200m running 6s, larger than the cluster. Once both run,
// the cpu their bound pods hold is sampled over about two generations
// of pods; its mean splits about 3:1, with the cluster busy.
//
// The backlog is in place before the scheduler starts: with no preemption,
// gangs placed while only a few had arrived would keep an early-comer's
// larger share for their whole run. Sizes matter too: a queue's admission
// may run OvercommitFactor (1.2) times its deserved share ahead, in whole
// gangs, which keeps gangs ready to replace the ones ending. Half the
// cluster (8 cpu: deserved 6 and 2, admission 7.2 and 2.4) and gangs of
// 400m give both queues that slack exactly (18 and 6 gangs); with a coarser
// size the small queue gets less and holds less than its share while
// replacements come up.
func queuesShareByWeight(t *testing.T, s *stack.Stack) {
	for _, n := range []string{"kwok-node-2", "kwok-node-3"} {
		cordon(t, s, n, true)
		t.Cleanup(func() { cordon(t, s, n, false) })
	}
	const clusterCPU = nodeCPU * 2
	for name, weight := range map[string]int32{"rf-three": 3, "rf-one": 1} {
		q := &vcv1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: vcv1beta1.QueueSpec{Weight: weight}}
		if _, err := s.Volcano.SchedulingV1beta1().Queues().Create(context.Background(), q, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	// The cluster runs 20 such gangs at once, 15 of rf-three and 5 of
	// rf-one at 3:1: each backlog lasts three rounds or more.
	const threes, ones = 60, 24
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < threes; i += 6 {
				mustCreate(t, s, job(fmt.Sprintf("three-%02d", i), "rf-three", 2, "200m", "6s"))
				if i < ones {
					mustCreate(t, s, job(fmt.Sprintf("one-%02d", i), "rf-one", 2, "200m", "6s"))
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	stack.WaitFor(t, "every gang has its PodGroup", 30*time.Second, func() (bool, string) {
		pgs, err := s.Volcano.SchedulingV1beta1().PodGroups(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(pgs.Items) >= threes+ones, fmt.Sprintf("%d PodGroups", len(pgs.Items))
	})
	runScheduler(t, s)

	stack.WaitFor(t, "both queues run pods", 30*time.Second, func() (bool, string) {
		three, one := heldByQueue(t, s)
		return three > 0 && one > 0, fmt.Sprintf("rf-three %.1f cpu, rf-one %.1f cpu", three, one)
	})
	time.Sleep(time.Second)
	var sumThree, sumOne float64
	samples := 0
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		three, one := heldByQueue(t, s)
		sumThree += three
		sumOne += one
		samples++
	}
	meanThree, meanOne := sumThree/float64(samples), sumOne/float64(samples)
	ratio := meanThree / meanOne
	t.Logf("mean cpu held over %d samples: rf-three %.2f, rf-one %.2f (ratio %.2f), cluster %.0f%% busy",
		samples, meanThree, meanOne, ratio, 100*(meanThree+meanOne)/clusterCPU)
	if ratio < 2.2 || ratio > 4 {
		t.Errorf("queues of weights 3 and 1 held cpu %.2f : %.2f, ratio %.2f, want about 3", meanThree, meanOne, ratio)
	}
	// Not a throughput test (that depends on the machine's load): only
	// that the ratio was not taken over a cluster left mostly idle.
	if busy := (meanThree + meanOne) / clusterCPU; busy < 0.4 {
		t.Errorf("the cluster was only %.0f%% busy with a backlog in both queues", 100*busy)
	}
}

// heldByQueue sums the cpu requests of the bound, unfinished pods of each queue.
func heldByQueue(t *testing.T, s *stack.Stack) (three, one float64) {
	pods, err := s.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		cpu := p.Spec.Containers[0].Resources.Requests.Cpu().AsApproximateFloat64()
		switch p.Annotations[batch.QueueNameKey] {
		case "rf-three":
			three += cpu
		case "rf-one":
			one += cpu
		}
	}
	return three, one
}

// mustCreate creates a Job from any goroutine; a failure fails the test.
func mustCreate(t *testing.T, s *stack.Stack, j *batch.Job) {
	if _, err := s.Volcano.BatchV1alpha1().Jobs(ns).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
		t.Errorf("create job %s: %v", j.Name, err)
	}
}
