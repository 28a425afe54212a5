package cache_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/shard"
)

// pod is a pod of job "job-<slot>" labelled with slot, controlled by that Job.
func pod(slot, i int) *corev1.Pod {
	job := fmt.Sprintf("job-%d", slot)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-worker-%d", job, i), Namespace: "default",
			Labels:      map[string]string{shard.SlotLabel: strconv.Itoa(slot)},
			Annotations: map[string]string{"volcano.sh/task-spec": "worker"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: job, UID: types.UID("u-" + job),
				Controller: ptr(true),
			}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/x"}}},
	}
}

func ptr[T any](v T) *T { return &v }

// createOwner creates the Job that pod(slot, i) names as its owner, and returns its UID.
func createOwner(ctx context.Context, t *testing.T, vc vcclient.Interface, slot int) types.UID {
	t.Helper()
	job := &batchv1alpha1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%d", slot), Namespace: "default"},
		Spec: batchv1alpha1.JobSpec{Tasks: []batchv1alpha1.TaskSpec{{
			Name: "worker", Replicas: 1,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/x"}}}},
		}}},
	}
	got, err := vc.BatchV1alpha1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.UID
}

// ownedBy sets the UID of p's owner Job.
func ownedBy(p *corev1.Pod, uid types.UID) *corev1.Pod {
	p.OwnerReferences[0].UID = uid
	return p
}

// slotsIn returns the slots of the pods in the cache, sorted and distinct.
func slotsIn(c *cache.Cache) []int {
	var slots []int
	for _, obj := range c.Owned(cache.Pods).Indexer().List() {
		n, _ := strconv.Atoi(obj.(*corev1.Pod).Labels[shard.SlotLabel])
		slots = append(slots, n)
	}
	sort.Ints(slots)
	return slices.Compact(slots)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 20s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The cache watches only the held slots: gaining slots lists just those,
// losing slots drops their objects, and events for them stop.
func TestShardedBySlot(t *testing.T) {
	cl := cluster.StartForTest(t, cluster.Options{Nodes: -1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := crds.Install(ctx, cl.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	kube := cl.Clientset()
	vc := vcclient.NewForConfigOrDie(cl.RESTConfig())
	// The pods' owner Jobs exist: the garbage collector deletes a pod whose owner does not, as
	// soon as it has discovered the Job kind.
	owners := map[int]types.UID{}
	for slot := range 6 {
		owners[slot] = createOwner(ctx, t, vc, slot)
	}
	for slot := range 6 {
		for i := range 2 {
			if _, err := kube.CoreV1().Pods("default").Create(ctx, ownedBy(pod(slot, i), owners[slot]), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var adds atomic.Int64
	ready := make(chan []int, 4)
	c := cache.New(cache.Config{
		Kube: kube, Volcano: vc,
		SlotsReady: func(slots []int) { ready <- slots },
	})
	c.Owned(cache.Pods).AddHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { adds.Add(1) }})
	c.SlotsGained([]int{0, 1}) // before Start: held back until the cache runs
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitReady := func(want []int) {
		t.Helper()
		select {
		case got := <-ready:
			if !slices.Equal(got, want) {
				t.Fatalf("ready for %v, want %v", got, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("slots %v never became ready", want)
		}
	}
	waitReady([]int{0, 1})
	if got := slotsIn(c); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("pods of slots %v in the cache, want [0 1]", got)
	}
	lists := c.Owned(cache.Pods).Listings()

	// Gaining slot 2 lists slot 2 only: one more list, and slots 0 and 1 stay.
	c.SlotsGained([]int{2})
	waitReady([]int{2})
	if got := slotsIn(c); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("pods of slots %v in the cache, want [0 1 2]", got)
	}
	if got := c.Owned(cache.Pods).Listings() - lists; got != 1 {
		t.Fatalf("gaining one slot started %d lists, want 1", got)
	}
	if got := adds.Load(); got != 6 {
		t.Fatalf("%d add events, want one per pod of slots 0-2 (6)", got)
	}

	// Losing slot 1 drops its pods at once; a new pod in slot 1 stays out,
	// one in slot 2 comes in.
	c.SlotsLost([]int{1})
	if got := slotsIn(c); !slices.Equal(got, []int{0, 2}) {
		t.Fatalf("after losing slot 1, pods of slots %v remain, want [0 2]", got)
	}
	// Slot 0's reflector, which also watched slot 1, starts over on slot 0
	// alone, so the API server stops sending slot 1's pods: one more list.
	eventually(t, "the shrunk reflector listed its kept slot again", func() bool {
		return c.Owned(cache.Pods).Listings()-lists == 2
	})
	for _, p := range []*corev1.Pod{ownedBy(pod(1, 7), owners[1]), ownedBy(pod(2, 7), owners[2])} {
		if _, err := kube.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "new pod of slot 2 in the cache", func() bool {
		_, ok, _ := c.Owned(cache.Pods).Indexer().GetByKey("default/job-2-worker-7")
		return ok
	})
	if _, ok, _ := c.Owned(cache.Pods).Indexer().GetByKey("default/job-1-worker-7"); ok {
		t.Fatal("a pod of a lost slot entered the cache")
	}

	// Deletes reach the index; the Job index groups pods by their Job.
	if err := kube.CoreV1().Pods("default").Delete(ctx, "job-0-worker-1", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "deleted pod gone from the cache", func() bool {
		pods, _ := c.OwnedBy(cache.Pods, "default/job-0", owners[0])
		return len(pods) == 1
	})
	if pods, _ := c.OwnedBy(cache.Pods, "default/job-2", owners[2]); len(pods) != 3 {
		t.Fatalf("job-2 has %d pods in the cache, want 3", len(pods))
	}
}
