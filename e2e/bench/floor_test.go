package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// BenchmarkAPIServerFloor measures what the local control plane itself
// allows, with no controller at all: the benchmark's clients write only
// what a burst of J Jobs × P pods needs at the least (each Job, each pod and
// each pod's binding: 1 + 2P writes per Job, none of the PodGroup, status or
// Event writes a controller adds), from RINGFIRE_BENCH_CREATORS goroutines
// with no client-side limit, on RINGFIRE_BENCH_NODES KWOK nodes that run
// each pod for RINGFIRE_BENCH_POD_RUN. The time from the first write to the
// last binding is a floor under BenchmarkJobCreation's s-to-all-pods for
// the same burst on the same machine: no controller can turn the Jobs into
// bound pods faster than the API server accepts the writes alone.
func BenchmarkAPIServerFloor(b *testing.B) {
	cluster.RequireTools(b)
	quietClientGo()
	c := configFromEnv(b)
	log := hclog.New(&hclog.LoggerOptions{Name: "bench", Level: hclog.Warn, Output: os.Stderr})
	for _, jobs := range c.jobs {
		b.Run(fmt.Sprintf("jobs=%dx%d", jobs, c.taskPods), func(b *testing.B) {
			cl := cluster.StartForTest(b, cluster.Options{
				Nodes: c.nodes, NodePods: strconv.Itoa(c.nodePods), Logger: log.Named("cluster"),
			})
			ctx, cancel := context.WithTimeout(context.Background(), c.waitLimit+time.Minute)
			defer cancel()
			if err := crds.Install(ctx, cl.RESTConfig()); err != nil {
				b.Fatal(err)
			}
			counter := newClientCounter()
			cfg := counted(cl.RESTConfig(), counter)
			kube, vc := kubernetes.NewForConfigOrDie(cfg), vcclient.NewForConfigOrDie(cfg)
			const ns = "floor"
			if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			nodes := cl.NodeNames()
			var next, failed atomic.Int64
			var firstErr atomic.Value
			start := time.Now()
			var wg sync.WaitGroup
			for range c.creators {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := int(next.Add(1)) - 1
						if i >= jobs || ctx.Err() != nil {
							return
						}
						if err := floorJob(ctx, kube, vc, ns, i, c.taskPods, nodes[i%len(nodes)], c.podRun); err != nil {
							failed.Add(1)
							firstErr.CompareAndSwap(nil, err)
						}
					}
				}()
			}
			wg.Wait()
			took := time.Since(start)
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d Jobs not written: %v", n, firstErr.Load())
			}
			b.ReportMetric(took.Seconds(), "s-to-all-pods-bound")
			b.ReportMetric(float64(jobs*c.taskPods)/took.Seconds(), "pods/s")
			b.ReportMetric(float64(jobs*(1+2*c.taskPods))/took.Seconds(), "writes/s")
			fmt.Printf("--- %s: %d Jobs, %d pods created and bound by %d clients in %.1fs (%.0f writes/s), %d nodes\n",
				b.Name(), jobs, jobs*c.taskPods, c.creators, took.Seconds(), float64(jobs*(1+2*c.taskPods))/took.Seconds(), len(nodes))
		})
	}
}

// floorJob writes Job i, then its pods, each created and bound to node.
func floorJob(ctx context.Context, kube kubernetes.Interface, vc vcclient.Interface, ns string, i, pods int, node string, run time.Duration) error {
	name := fmt.Sprintf("job-%05d", i)
	tmpl := floorPod(run)
	job := &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batch.JobSpec{SchedulerName: "none", Queue: "default", Tasks: []batch.TaskSpec{{
			Name: "w", Replicas: int32(pods), Template: corev1.PodTemplateSpec{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec},
		}}},
	}
	if _, err := vc.BatchV1alpha1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create job %s: %w", name, err)
	}
	for p := range pods {
		pod := tmpl.DeepCopy()
		pod.Name, pod.Namespace = fmt.Sprintf("%s-w-%d", name, p), ns
		if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s: %w", pod.Name, err)
		}
		err := kube.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod.Name},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("bind pod %s: %w", pod.Name, err)
		}
	}
	return nil
}

// floorPod is a pod like the ones BenchmarkJobCreation's Jobs make.
func floorPod(run time.Duration) *corev1.Pod {
	spec := vcjob.PodSpec(benchCPU, benchMemory)
	spec.SchedulerName = "none"
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: vcjob.Runs(run.String(), "")}, Spec: spec}
}
