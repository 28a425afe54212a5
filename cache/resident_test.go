package cache_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/shard"
)

// What one replica keeps of a cluster of 1,000 Volcano Jobs when it holds a third of the slots:
// the Jobs of its slots in full, every other one as a summary a fraction of the size (and packed,
// a fraction too, for a gain of its slot), the owned
// objects (pods) of its slots only, the pods cut down to what is read of them, and nothing
// anywhere of the managed fields. Against a real
// API server, whose objects carry the managed fields any client's writes leave; the replica's
// clients as `ringfire run` makes them (built-in kinds in protobuf, Volcano's in JSON).
func TestResidentJobsMemoryPerSlot(t *testing.T) {
	const (
		jobs      = 1000
		slots     = 256
		podsEvery = 5 // every 5th Job has pods
		podsPer   = 2
		// Bounds on a summary's encoded size (JSON of the stored object), measured at 304
		// bytes, 1/5.2 of the full Job's 1,576 (2,008 with the managed fields one create
		// leaves): what is kept of the Jobs of other slots must stay metadata, spec.queue and
		// status.state.
		maxSummaryAvg      = 600
		maxSummaryFraction = 4 // summary ≤ full / 4, on average
		// Behind each summary, the whole Job packed (deflated JSON) for a gain of its slot:
		// at most half the full Job's JSON on average.
		maxPackedFraction = 2
		// A cached pod (cache.SlimPod) against the API server's, managed fields included:
		// at most a third.
		maxPodFraction = 3
	)
	start := time.Now()
	cl := cluster.StartForTest(t, cluster.Options{Nodes: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := crds.Install(ctx, cl.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	cfg := cl.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 2000
	vc := vcclient.NewForConfigOrDie(cfg)
	protoCfg := cl.RESTConfig()
	protoCfg.QPS, protoCfg.Burst = 1000, 2000
	protoCfg.ContentType = runtime.ContentTypeProtobuf
	protoCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kube := kubernetes.NewForConfigOrDie(protoCfg)
	up := time.Since(start)

	// The Jobs, and after each of every podsEvery-th its pods, created by 16 clients at once.
	parallel(t, jobs, func(i int) error {
		name := fmt.Sprintf("resident-%04d", i)
		job, err := vc.BatchV1alpha1().Jobs("default").Create(ctx, residentJob(name), metav1.CreateOptions{})
		if err != nil || i%podsEvery != 0 {
			return err
		}
		slot := shard.SlotOf("default/"+name, slots)
		for n := range podsPer {
			if _, err := kube.CoreV1().Pods("default").Create(ctx, residentPod(name, job.UID, slot, n), metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		return nil
	})
	created := time.Since(start) - up

	// Held: every third slot.
	var held []int
	isHeld := map[int]bool{}
	for n := 0; n < slots; n += 3 {
		held = append(held, n)
		isHeld[n] = true
	}
	var mu sync.Mutex
	ready := map[int]bool{}
	allReady := make(chan struct{})
	c := cache.New(cache.Config{
		Kube: kube, Volcano: vc, Slots: func() int { return slots },
		SlotsReady: func(s []int) {
			mu.Lock()
			defer mu.Unlock()
			for _, n := range s {
				ready[n] = true
			}
			if len(ready) == len(held) {
				close(allReady)
			}
		},
	})
	c.SlotsGained(held)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-allReady:
	case <-ctx.Done():
		t.Fatalf("the held slots were not all ready: %d of %d", len(ready), len(held))
	}
	listed := time.Since(start) - up - created

	// The API server's objects, as a client that keeps everything sees them.
	apiJobs, err := vc.BatchV1alpha1().Jobs("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	apiPods, err := kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(apiJobs.Items) != jobs || len(apiPods.Items) != jobs/podsEvery*podsPer {
		t.Fatalf("the API server has %d Jobs and %d pods, want %d and %d", len(apiJobs.Items), len(apiPods.Items), jobs, jobs/podsEvery*podsPer)
	}

	// Jobs: those of held slots in full, the others summaries; no managed fields.
	var full, summaries, fullBytes, summaryBytes, apiFullBytes int
	var summarySizes []int
	for i := range apiJobs.Items {
		api := &apiJobs.Items[i]
		key := "default/" + api.Name
		if len(api.ManagedFields) == 0 {
			t.Fatalf("the API server's %s has no managed fields: nothing to measure", key)
		}
		obj, ok, _ := c.Jobs().GetIndexer().GetByKey(key)
		if !ok {
			t.Fatalf("%s is not in the cache", key)
		}
		stored := obj.(*batch.Job)
		if stored.ManagedFields != nil {
			t.Errorf("%s is cached with its managed fields", key)
		}
		size := jsonSize(t, stored)
		job, inFull, err := c.Jobs().Get(key)
		switch slot := shard.SlotOf(key, slots); {
		case isHeld[slot]:
			if err != nil || !inFull || len(job.Spec.Tasks) != 2 {
				t.Fatalf("%s of held slot %d: %v, in full %v; want it in full", key, slot, err, inFull)
			}
			full++
			fullBytes += size
			apiFullBytes += jsonSize(t, api)
		default:
			if !errors.Is(err, cache.ErrSummaryOnly) || len(stored.Spec.Tasks) != 0 {
				t.Fatalf("%s of slot %d, not held: err %v, %d tasks; want a summary", key, slot, err, len(stored.Spec.Tasks))
			}
			summaries++
			summaryBytes += size
			summarySizes = append(summarySizes, size)
		}
	}
	if full == 0 || summaries == 0 || full+summaries != jobs {
		t.Fatalf("%d Jobs in full, %d summaries, of %d", full, summaries, jobs)
	}
	if gotFull, gotSummaries := c.Jobs().Counts(); gotFull != full || gotSummaries != summaries {
		t.Errorf("Counts: %d full, %d summaries; want %d, %d", gotFull, gotSummaries, full, summaries)
	}
	avgFull, avgSummary, avgAPIFull := fullBytes/full, summaryBytes/summaries, apiFullBytes/full
	sort.Ints(summarySizes)
	if avgSummary > maxSummaryAvg {
		t.Errorf("a summary takes %d bytes on average, want ≤ %d", avgSummary, maxSummaryAvg)
	}
	if avgSummary*maxSummaryFraction > avgFull {
		t.Errorf("a summary takes %d bytes on average, more than 1/%d of a full Job's %d", avgSummary, maxSummaryFraction, avgFull)
	}
	// A summary's Job is packed once it has gone a moment without a change.
	for deadline := time.Now().Add(30 * time.Second); c.Jobs().Unpacked() > 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	if n := c.Jobs().Unpacked(); n > 0 {
		t.Errorf("%d summaries' Jobs still not packed 30 s after the cache was ready", n)
	}
	avgPacked := c.Jobs().PackedBytes() / summaries
	if avgPacked == 0 || avgPacked*maxPackedFraction > avgFull {
		t.Errorf("a packed Job takes %d bytes on average, want some and ≤ 1/%d of a full Job's %d", avgPacked, maxPackedFraction, avgFull)
	}

	// Pods: those of held slots only, without managed fields.
	var wantPods, podProtoBefore, podProtoAfter, podJSONBefore, podJSONAfter int
	cachedPods := c.Owned(cache.Pods).Indexer()
	for i := range apiPods.Items {
		api := &apiPods.Items[i]
		slot, _ := strconv.Atoi(api.Labels[shard.SlotLabel])
		obj, ok, _ := cachedPods.GetByKey(api.Namespace + "/" + api.Name)
		if ok != isHeld[slot] {
			t.Fatalf("pod %s of slot %d (held %v) in the cache: %v", api.Name, slot, isHeld[slot], ok)
		}
		if !ok {
			continue
		}
		p := obj.(*corev1.Pod)
		if p.ManagedFields != nil {
			t.Errorf("pod %s is cached with its managed fields", p.Name)
		}
		// Slim (cache.SlimPod, and its labels and annotations cut to those read): what the
		// controllers read is kept, the containers are not.
		if len(p.Spec.Containers) != 0 || p.Spec.Hostname != api.Spec.Hostname || p.Spec.SchedulerName != api.Spec.SchedulerName ||
			p.Spec.RestartPolicy != api.Spec.RestartPolicy || !subset(p.Annotations, api.Annotations) || !subset(p.Labels, api.Labels) ||
			p.Labels[shard.SlotLabel] == "" || p.Annotations[batch.TaskSpecKey] == "" || p.Annotations[batch.JobVersion] == "" ||
			len(p.OwnerReferences) != 1 || p.UID != api.UID || p.ResourceVersion != api.ResourceVersion || p.Status.Phase != api.Status.Phase {
			t.Errorf("pod %s is cached as %+v, want its metadata, phase and named spec fields and no containers", p.Name, p)
		}
		wantPods++
		podProtoBefore += api.Size()
		podJSONBefore += jsonSize(t, api)
		podProtoAfter += p.Size()
		podJSONAfter += jsonSize(t, p)
	}
	if wantPods == 0 || len(cachedPods.ListKeys()) != wantPods {
		t.Fatalf("%d pods cached, want %d (those of held slots)", len(cachedPods.ListKeys()), wantPods)
	}
	if podProtoAfter*maxPodFraction > podProtoBefore {
		t.Errorf("a cached pod takes %d bytes (protobuf) on average, more than 1/%d of the API server's %d", podProtoAfter/wantPods, maxPodFraction, podProtoBefore/wantPods)
	}

	// The gauge says the same.
	reg := prometheus.NewRegistry()
	reg.MustRegister(c.ObjectsCollector())
	gauge := gather(t, reg, "ringfire_cache_objects")
	for _, want := range []struct {
		resource, form string
		n              int
	}{{"jobs", cache.FormFull, full}, {"jobs", cache.FormSummary, summaries}, {"pods", cache.FormSummary, wantPods}} {
		if got := gauge[want.resource+"/"+want.form]; got != float64(want.n) {
			t.Errorf("ringfire_cache_objects{resource=%q,form=%q} = %v, want %d", want.resource, want.form, got, want.n)
		}
	}

	t.Logf("%d Jobs, %d slots, %d held (%d Jobs in full, %d summaries), %d of %d pods cached; cluster %v, create %v, cache ready %v",
		jobs, slots, len(held), full, summaries, wantPods, len(apiPods.Items), up.Round(time.Millisecond), created.Round(time.Millisecond), listed.Round(time.Millisecond))
	t.Logf("full Job: %d bytes (JSON) as cached, %d with its managed fields as the API server has it", avgFull, avgAPIFull)
	t.Logf("summary: %d bytes (JSON) on average, %d to %d; 1/%.1f of a full Job", avgSummary, summarySizes[0], summarySizes[len(summarySizes)-1], float64(avgFull)/float64(avgSummary))
	t.Logf("packed Job behind a summary: %d bytes on average; 1/%.1f of a full Job's JSON", avgPacked, float64(avgFull)/float64(avgPacked))
	t.Logf("pod: %d bytes (protobuf) as cached, %d with its managed fields; JSON %d, %d",
		podProtoAfter/wantPods, podProtoBefore/wantPods, podJSONAfter/wantPods, podJSONBefore/wantPods)
}

// residentJob is a Job as users write them: a master and 4 workers with resources, env, a
// command, the svc and env plugins, a policy.
func residentJob(name string) *batch.Job {
	task := func(name string, replicas int32) batch.TaskSpec {
		return batch.TaskSpec{
			Name: name, Replicas: replicas,
			Policies: []batch.LifecyclePolicy{{Event: "PodFailed", Action: "RestartJob"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "trainer", "role": name}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name: name, Image: "registry.example.invalid/team/trainer:v1.2.3",
						Command: []string{"python", "-m", "trainer", "--role", name, "--epochs", "10"},
						Env: []corev1.EnvVar{
							{Name: "DATA_DIR", Value: "/data/set-a"}, {Name: "LOG_LEVEL", Value: "info"},
							{Name: "BATCH_SIZE", Value: "256"},
						},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
						},
					}},
				},
			},
		}
	}
	return &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"team": "ml", "project": "resident"}},
		Spec: batch.JobSpec{
			SchedulerName: "volcano", Queue: "default", MinAvailable: 5, MaxRetry: 3,
			Plugins: map[string][]string{"svc": {}, "env": {}},
			Tasks:   []batch.TaskSpec{task("master", 1), task("worker", 4)},
		},
	}
}

// residentPod is a pod of the Job's worker task as the Job controller makes it: the slot label,
// Volcano's labels and annotations, the Job as controller.
func residentPod(job string, uid types.UID, slot, i int) *corev1.Pod {
	name := fmt.Sprintf("%s-worker-%d", job, i)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default",
			Labels: map[string]string{
				shard.SlotLabel: strconv.Itoa(slot), "volcano.sh/job-name": job, "volcano.sh/job-namespace": "default",
				"volcano.sh/queue-name": "default", "volcano.sh/task-spec": "worker", "volcano.sh/job-version": "0",
				"app": "trainer", "role": "worker",
			},
			Annotations: map[string]string{
				"scheduling.k8s.io/group-name": job, "volcano.sh/job-name": job, "volcano.sh/task-spec": "worker",
				"volcano.sh/job-version": "0", "volcano.sh/queue-name": "default", "volcano.sh/task-index": strconv.Itoa(i),
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: job, UID: uid,
				Controller: ptr(true), BlockOwnerDeletion: ptr(true),
			}},
		},
		Spec: corev1.PodSpec{
			SchedulerName: "volcano", RestartPolicy: corev1.RestartPolicyNever, Hostname: name, Subdomain: job,
			Containers: []corev1.Container{{
				Name: "worker", Image: "registry.example.invalid/team/trainer:v1.2.3",
				Command: []string{"python", "-m", "trainer", "--role", "worker", "--epochs", "10"},
				Env: []corev1.EnvVar{
					{Name: "DATA_DIR", Value: "/data/set-a"}, {Name: "LOG_LEVEL", Value: "info"}, {Name: "BATCH_SIZE", Value: "256"},
					{Name: "VC_WORKER_NUM", Value: "4"}, {Name: "VC_MASTER_NUM", Value: "1"}, {Name: "VK_TASK_INDEX", Value: strconv.Itoa(i)},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
				},
			}},
		},
	}
}

func jsonSize(t *testing.T, obj any) int {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// gather returns the values of a gauge's series, keyed "resource/form".
func gather(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var resource, form string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "resource":
					resource = l.GetValue()
				case "form":
					form = l.GetValue()
				}
			}
			out[resource+"/"+form] = m.GetGauge().GetValue()
		}
	}
	return out
}

// subset reports whether every entry of a is in b.
func subset(a, b map[string]string) bool {
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
