package cache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/ringfire/ringfire/shard"
)

// batchPod is a pod of the batch/v1 Job name whose controller has uid, with
// the labels Kubernetes gives a Job's pods and its Job's slot's.
func batchPod(name, job string, uid types.UID, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, ResourceVersion: rv,
		Labels: map[string]string{batchv1.ControllerUidLabel: string(uid), batchv1.JobNameLabel: job,
			shard.SlotLabel: strconv.Itoa(shard.SlotOf("ns/"+job, testSlots))},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job, UID: uid, Controller: ptr.To(true)}},
	}}
}

func batchJob(name string, uid types.UID, parallelism int32) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To(parallelism),
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: string(uid)}},
		},
	}
}

// A batch/v1 Job's pods read from the API server are those its selector
// matches and it controls, by UID, sorted by name; the Job stays read early
// until the cache shows the same pods at the same versions, apart from a
// Volcano Job of the same key; a lost slot forgets it.
func TestBatchPodsReadEarlyUntilTheCacheCaughtUp(t *testing.T) {
	job := batchJob("early", "uid-early", 2)
	b, a := batchPod("early-b", "early", job.UID, "7"), batchPod("early-a", "early", job.UID, "8")
	// The selector matches it, but another Job controls it (a selector a user wrote may be wide).
	adopted := batchPod("adopted", "other", "uid-other", "3")
	adopted.Labels[batchv1.ControllerUidLabel] = string(job.UID)
	adopted.Labels[shard.SlotLabel] = b.Labels[shard.SlotLabel]
	// The Job's, without the slot label: the cache never holds it, and the read leaves it out.
	unlabelled := batchPod("early-unlabelled", "early", job.UID, "4")
	delete(unlabelled.Labels, shard.SlotLabel)
	// An earlier Job of the same name: the ByBatchJob index files it under the key too.
	earlier := batchPod("early-old", "early", "uid-earlier", "2")
	c := New(Config{Kube: kubefake.NewClientset(b, a, adopted, earlier, unlabelled), Volcano: vcfake.NewSimpleClientset(), Slots: func() int { return testSlots }})
	key := "ns/early"
	podsListing(c, key)
	read, err := c.BatchPodsFromServer(context.Background(), key, job)
	if err != nil {
		t.Fatal(err)
	}
	if len(read) != 2 || read[0].Name != "early-a" || read[1].Name != "early-b" {
		t.Fatalf("read %v; want early-a, early-b", podNames(read))
	}
	if !c.BatchReadEarly(key) || c.ReadEarly(key) {
		t.Fatalf("read early: batch %v, volcano %v; want the batch/v1 Job's alone", c.BatchReadEarly(key), c.ReadEarly(key))
	}
	if c.BatchCaughtUp(key, job, read) {
		t.Fatal("caught up with a cache that has none of the pods read")
	}
	olderB := b.DeepCopy()
	olderB.ResourceVersion = "6"
	// The Job's, with its controller-uid label taken off: no read gives it, so the cache's
	// copy must not keep the Job from catching up.
	stripped := batchPod("early-stripped", "early", job.UID, "5")
	delete(stripped.Labels, batchv1.ControllerUidLabel)
	for _, p := range []*corev1.Pod{a, olderB, earlier, stripped} {
		if err := c.owned[Pods].Indexer().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if c.BatchCaughtUp(key, job, read) {
		t.Fatal("caught up with a cache that has an older version of a pod read")
	}
	if err := c.owned[Pods].Indexer().Update(b); err != nil {
		t.Fatal(err)
	}
	if !c.BatchCaughtUp(key, job, read) || c.BatchReadEarly(key) {
		t.Fatal("not caught up, or still read early, with the cache showing the Job's pods as read (and an earlier Job's, and one no read gives, beside them)")
	}
	if _, err := c.BatchPodsFromServer(context.Background(), key, job); err != nil || !c.BatchReadEarly(key) {
		t.Fatalf("read again: %v, read early %v", err, c.BatchReadEarly(key))
	}
	c.SlotsLost([]int{shard.SlotOf(key, testSlots)})
	if c.BatchReadEarly(key) {
		t.Fatal("still read early after its slot was lost")
	}
	if !c.BatchCaughtUp(key, nil, nil) {
		t.Fatal("a Job gone is not caught up")
	}
}

// A batch/v1 Job that asks for more than EarlyPodsLimit pods at once is not
// read; one whose selector matches more, its own or not, is read once per
// gain, and not kept read early.
func TestBatchPodsFromServerBoundsThePodsRead(t *testing.T) {
	objs := make([]runtime.Object, 0, EarlyPodsLimit+1)
	for i := range EarlyPodsLimit + 1 {
		// Half of them another Job's that the selector matches too.
		uid := types.UID("uid-wide")
		if i%2 == 1 {
			uid = "uid-other"
		}
		p := batchPod(fmt.Sprintf("wide-%d", i), "wide", uid, "1")
		p.Labels["app"] = "shared"
		objs = append(objs, p)
	}
	kube, lists := podListsCounted(objs...)
	c := New(Config{Kube: kube, Volcano: vcfake.NewSimpleClientset(), Slots: func() int { return testSlots }})
	wide := batchJob("wide", "uid-wide", 1)
	wide.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "shared"}}
	podsListing(c, "ns/wide")
	for i := range 2 {
		if pods, err := c.BatchPodsFromServer(context.Background(), "ns/wide", wide); !errors.Is(err, ErrTooManyPods) || pods != nil {
			t.Fatalf("read %d: %d pods, %v; want ErrTooManyPods", i, len(pods), err)
		}
	}
	if *lists != 1 {
		t.Errorf("a Job found too large was listed %d times; want once for the gain", *lists)
	}
	if c.BatchReadEarly("ns/wide") {
		t.Fatal("a Job whose read was refused is marked read early")
	}
	*lists = 0
	for _, parallelism := range []int32{EarlyPodsLimit + 1, math.MaxInt32} {
		many := batchJob("many", "uid-many", parallelism)
		if _, err := c.BatchPodsFromServer(context.Background(), "ns/many", many); !errors.Is(err, ErrTooManyPods) || *lists != 0 {
			t.Errorf("a Job of parallelism %d: %v after %d lists; want ErrTooManyPods without a list", parallelism, err, *lists)
		}
	}
	noSelector := batchJob("bare", "uid-bare", 1)
	noSelector.Spec.Selector = nil
	if _, err := c.BatchPodsFromServer(context.Background(), "ns/bare", noSelector); err == nil || *lists != 0 {
		t.Errorf("a Job without a selector: %v after %d lists; want an error without a list", err, *lists)
	}
}

func podNames(pods []*corev1.Pod) []string {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	return names
}
