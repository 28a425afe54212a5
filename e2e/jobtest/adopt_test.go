package jobtest

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/ringfire/ringfire/controllers/job/build"
	"github.com/ringfire/ringfire/controllers/job/plugins"
	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
	"github.com/ringfire/ringfire/shard"
)

// ringSlots is the slot count of the stack's ring.
const ringSlots = 256

// made is an object the test made as vc-controller-manager would: kind, name, UID and its
// Job's name.
type made struct {
	kind, name string
	uid        types.UID
	job        string
}

// A Job that vc-controller-manager started (its PodGroup, its volume claim, the svc and ssh
// plugins' Service, ConfigMap, NetworkPolicy and Secret, and its pods, all without the slot
// label), and one it
// was stopped in the middle of starting (its PodGroup and one of its two pods), are taken over
// by three ringfire replicas started afterwards: they label every object with its Job's slot
// (but the Secret, which ringfire reaches by name), create only the missing pod, delete
// nothing, and run both Jobs to Completed.
func TestAdoptsWhatVolcanoMade(t *testing.T) {
	s := stack.Start(t, stack.Options{NoReplicas: true, StandIn: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const name, partial = "adopted", "partial"
	job := vcjob.New(ns, name, vcjob.Task("master", 1, "40s", ""), vcjob.Task("worker", 2, "40s", ""))
	job.Spec.Plugins = map[string][]string{"svc": {}, "ssh": {}, "env": {}}
	job.Spec.Volumes = []batch.VolumeSpec{{MountPath: "/data", VolumeClaim: claimSpec()}}
	state.Defaults(job)
	job = vcjob.Create(t, s.Volcano, job)
	objs := startAsVolcano(ctx, t, s, job, -1)
	if len(objs) != 9 {
		t.Fatalf("made %d objects, want the PodGroup, the claim, 4 of the plugins and 3 pods: %v", len(objs), objs)
	}
	half := vcjob.New(ns, partial, vcjob.Task("worker", 2, "40s", ""))
	state.Defaults(half)
	half = vcjob.Create(t, s.Volcano, half)
	objs = append(objs, startAsVolcano(ctx, t, s, half, 1)...)
	setPending(ctx, t, s, partial)

	// The pods run (the stand-in bound them, KWOK runs them); the first Job is Running, as
	// vc-controller-manager would have written it.
	waitRunning(ctx, t, s, name, 3)
	setRunning(ctx, t, s, name, 3)

	// Every pod that comes to exist from now on, by name: its UIDs.
	var mu sync.Mutex
	uids := map[string]map[types.UID]bool{}
	s.WatchPods(ns, func(_ watch.EventType, p *corev1.Pod) {
		mu.Lock()
		defer mu.Unlock()
		if uids[p.Name] == nil {
			uids[p.Name] = map[types.UID]bool{}
		}
		uids[p.Name][p.UID] = true
	})

	for i := range 3 {
		s.StartReplica(fmt.Sprintf("r%d", i))
	}
	s.WaitRing(60 * time.Second)

	// While the Jobs run, every object made before is still there, the same object, and comes
	// to carry its Job's slot label. (Once a Job completes, its PodGroup and plugin objects go,
	// as under Volcano; its pods stay.)
	start := time.Now()
	for {
		problems := checkAdopted(ctx, s, objs)
		if len(problems) == 0 {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("30 s after the ring settled:\n%s", strings.Join(problems, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("every object made before carries its slot label %v after the ring settled", time.Since(start).Round(time.Millisecond))
	for _, j := range []string{name, partial} {
		if got, err := s.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, j, metav1.GetOptions{}); err != nil || got.Status.State.Phase == batch.Completed {
			t.Fatalf("job %s completed (or is gone: %v) before its objects were checked; the check proves nothing", j, err)
		}
	}

	for _, j := range []struct {
		name string
		pods int32
	}{{name, 3}, {partial, 2}} {
		got := s.WaitPhase(ns, j.name, 120*time.Second, batch.Completed)
		if got.Status.Succeeded != j.pods {
			t.Errorf("%s: succeeded %d, want %d\n%s", j.name, got.Status.Succeeded, j.pods, s.Describe(ns, j.name))
		}
	}

	// The one pod missing was created, once; every other pod is the one made before. No other
	// object of the Jobs was created (every one existed), no create was refused.
	mu.Lock()
	for pod, seen := range uids {
		if len(seen) != 1 {
			t.Errorf("pod %s existed as %d objects, want 1", pod, len(seen))
		}
	}
	mu.Unlock()
	owned := map[string]bool{"pods": true, "podgroups": true, "services": true, "configmaps": true,
		"secrets": true, "networkpolicies": true, "persistentvolumeclaims": true}
	creates := map[string]int{}
	for _, w := range s.Writes() {
		parts := strings.Split(w, "/")
		if strings.HasPrefix(w, "POST ") && strings.Contains(w, "/namespaces/"+ns+"/") && owned[parts[len(parts)-1]] {
			creates[parts[len(parts)-1]]++
		}
	}
	if want := map[string]int{"pods": 1}; !maps.Equal(creates, want) {
		t.Errorf("the replicas created %v, want only the missing pod (%v)", creates, want)
	}
	if refused := s.RefusedCreates(); len(refused) > 0 {
		t.Errorf("creates refused as AlreadyExists: %v", refused)
	}

	// The pods made before are still there once the Jobs completed.
	var pods []made
	for _, o := range objs {
		if o.kind == "Pod" {
			pods = append(pods, o)
		}
	}
	for _, p := range checkAdopted(ctx, s, pods) {
		t.Error(p)
	}
	if pods := s.Pods(ns, name); len(pods) != 3 {
		t.Errorf("%d pods of %s, want the 3 made before the switch", len(pods), name)
	}
	if pods := s.Pods(ns, partial); len(pods) != 2 {
		t.Errorf("%d pods of %s, want 2", len(pods), partial)
	}
}

// startAsVolcano makes what vc-controller-manager makes for a new Job, without the slot label
// (ringfire's builders are Volcano's names, labels, annotations and owner references): the
// PodGroup, the plugins' objects and the first pods of each task (all when pods < 0). It
// returns what it made.
func startAsVolcano(ctx context.Context, t *testing.T, s *stack.Stack, job *batch.Job, pods int) []made {
	t.Helper()
	var out []made
	unlabel := func(m metav1.Object) {
		l := m.GetLabels()
		delete(l, shard.SlotLabel)
		m.SetLabels(l)
	}
	pg := build.PodGroup(job, 0, nil)
	unlabel(pg)
	pgGot, err := s.Volcano.SchedulingV1beta1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, made{"PodGroup", pgGot.Name, pgGot.UID, job.Name})

	for i := range job.Spec.Volumes {
		pvc := build.PVC(job, i, 0)
		if pvc == nil {
			continue
		}
		unlabel(pvc)
		got, err := s.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, made{"PersistentVolumeClaim", got.Name, got.UID, job.Name})
	}

	set, err := plugins.ForJob(job, plugins.Env{})
	if err != nil {
		t.Fatal(err)
	}
	changes, err := set.OnJobAdd(job)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range append(changes.Create, changes.Apply...) {
		unlabel(o)
		var uid types.UID
		var kind string
		switch o := o.(type) {
		case *corev1.Service:
			kind = "Service"
			got, err := s.Kube.CoreV1().Services(ns).Create(ctx, o, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			uid = got.UID
		case *corev1.ConfigMap:
			kind = "ConfigMap"
			got, err := s.Kube.CoreV1().ConfigMaps(ns).Create(ctx, o, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			uid = got.UID
		case *corev1.Secret:
			kind = "Secret"
			got, err := s.Kube.CoreV1().Secrets(ns).Create(ctx, o, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			uid = got.UID
		case *networkingv1.NetworkPolicy:
			kind = "NetworkPolicy"
			got, err := s.Kube.NetworkingV1().NetworkPolicies(ns).Create(ctx, o, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			uid = got.UID
		default:
			t.Fatalf("plugin object %T", o)
		}
		out = append(out, made{kind, o.GetName(), uid, job.Name})
	}

	for i := range job.Spec.Tasks {
		task := &job.Spec.Tasks[i]
		n := int(task.Replicas)
		if pods >= 0 {
			n = min(n, pods)
		}
		for index := range n {
			pod := build.Pod(job, task, index, 0)
			if err := set.OnPodCreate(pod, job); err != nil {
				t.Fatal(err)
			}
			unlabel(pod)
			got, err := s.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, made{"Pod", got.Name, got.UID, job.Name})
		}
	}
	return out
}

// waitRunning waits until n pods of the Job run.
func waitRunning(ctx context.Context, t *testing.T, s *stack.Stack, name string, n int) {
	t.Helper()
	for {
		running := 0
		for _, p := range s.Pods(ns, name) {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		if running == n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d pods of %s running: %v", running, n, name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// setRunning writes the status vc-controller-manager writes once n pods of the Job run.
func setRunning(ctx context.Context, t *testing.T, s *stack.Stack, name string, n int32) {
	t.Helper()
	job, err := s.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	job.Status = batch.JobStatus{
		State:        batch.JobState{Phase: batch.Running, LastTransitionTime: now},
		MinAvailable: job.Spec.MinAvailable,
		Running:      n,
		TaskStatusCount: map[string]batch.TaskState{
			"master": {Phase: map[corev1.PodPhase]int32{corev1.PodRunning: 1}},
			"worker": {Phase: map[corev1.PodPhase]int32{corev1.PodRunning: n - 1}},
		},
		ControlledResources: map[string]string{"plugin-env": "env", "plugin-ssh": "ssh", "plugin-svc": "svc"},
		Conditions: []batch.JobCondition{
			{Status: batch.Pending, LastTransitionTime: &now},
			{Status: batch.Running, LastTransitionTime: &now},
		},
	}
	if _, err := s.Volcano.BatchV1alpha1().Jobs(ns).UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The stand-in writes the PodGroup too: read it again on a conflict.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pg, err := s.Volcano.SchedulingV1beta1().PodGroups(ns).Get(ctx, build.PodGroupName(job), metav1.GetOptions{})
		if err != nil {
			return err
		}
		pg.Status.Phase = scheduling.PodGroupRunning
		pg.Status.Running = n
		_, err = s.Volcano.SchedulingV1beta1().PodGroups(ns).Update(ctx, pg, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkAdopted says which of objs is gone, re-created or without its Job's slot label (a
// Secret: with a slot label).
func checkAdopted(ctx context.Context, s *stack.Stack, objs []made) []string {
	var out []string
	for _, o := range objs {
		slot := strconv.Itoa(shard.SlotOf(ns+"/"+o.job, ringSlots))
		if o.kind == "Secret" {
			slot = "" // reached by name, never listed: ringfire does not label it
		}
		m, err := getMeta(ctx, s, o.kind, o.name)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%s %s made before the switch: %v", o.kind, o.name, err))
		case m.GetUID() != o.uid:
			out = append(out, fmt.Sprintf("%s %s was re-created (UID %s, made as %s)", o.kind, o.name, m.GetUID(), o.uid))
		case m.GetLabels()[shard.SlotLabel] != slot:
			out = append(out, fmt.Sprintf("%s %s has slot label %q, want %q", o.kind, o.name, m.GetLabels()[shard.SlotLabel], slot))
		}
	}
	return out
}

// setPending writes the status vc-controller-manager writes once it has made a Job's PodGroup.
func setPending(ctx context.Context, t *testing.T, s *stack.Stack, name string) {
	t.Helper()
	job, err := s.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	job.Status = batch.JobStatus{
		State:        batch.JobState{Phase: batch.Pending, LastTransitionTime: now},
		MinAvailable: job.Spec.MinAvailable,
		Conditions:   []batch.JobCondition{{Status: batch.Pending, LastTransitionTime: &now}},
	}
	if _, err := s.Volcano.BatchV1alpha1().Jobs(ns).UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// getMeta reads the metadata of the object of kind named name.
func getMeta(ctx context.Context, s *stack.Stack, kind, name string) (metav1.Object, error) {
	get := metav1.GetOptions{}
	switch kind {
	case "PodGroup":
		return s.Volcano.SchedulingV1beta1().PodGroups(ns).Get(ctx, name, get)
	case "Service":
		return s.Kube.CoreV1().Services(ns).Get(ctx, name, get)
	case "ConfigMap":
		return s.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name, get)
	case "Secret":
		return s.Kube.CoreV1().Secrets(ns).Get(ctx, name, get)
	case "PersistentVolumeClaim":
		return s.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, get)
	case "NetworkPolicy":
		return s.Kube.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, get)
	default:
		return s.Kube.CoreV1().Pods(ns).Get(ctx, name, get)
	}
}
