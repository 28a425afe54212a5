package quarantinetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/deploy"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/memcg"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/e2e/standin"
	"github.com/ringfire/ringfire/e2e/vcjob"
	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/shard"
)

const (
	prefix   = "/quarantinetest"
	slots    = 64
	replicas = 3
	// qps throttles each replica's API client, and budget is its quarantine time budget: one
	// reconcile of a kill sends up to 256 deletes, 25.6 s at 10 a second, past the budget.
	qps    = 10
	budget = 20 * time.Second
	// bigPods is the aborted Job's size: two reconciles of its kill, the first past the budget.
	bigPods = 300
	// pauseFor is how long the holder of the aborted Job is stopped: past the budget and the
	// lease, so that on waking it finds its runs in flight for longer than the budget.
	pauseFor = budget + 5*time.Second
	// memoryLimit is each replica's memory cgroup's.
	memoryLimit = 1 << 30
	keepEnv     = "RINGFIRE_QUARANTINE_DIR"
)

type world struct {
	kube  kubernetes.Interface
	vc    vcclient.Interface
	etcd  *clientv3.Client
	fleet *memcg.Fleet
}

func startWorld(t *testing.T) *world {
	t.Helper()
	logDir, clusterDir := procs.Dirs(t, keepEnv)
	log := hclog.New(&hclog.LoggerOptions{Name: "quarantinetest", Level: hclog.Warn, Output: os.Stderr})
	cl := cluster.StartForTest(t, cluster.Options{Nodes: 4, NodePods: "200", Dir: clusterDir, Logger: log.Named("cluster")})
	kube, vc := standin.StartForTest(t, cl, 1000) // ringfire's CRDs and policies; the stand-in admits and binds
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := deploy.InstallRBAC(ctx, cl.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	ring := localetcd.StartForTest(t)
	w := &world{kube: kube, vc: vc, etcd: localetcd.ClientForTest(t, ring.Endpoint())}
	w.fleet = memcg.NewFleet(t, procs.Args{
		Bin: procs.Build(t), Etcd: ring.Endpoint(), Prefix: prefix, LogDir: logDir, Slots: slots,
		Kubeconfig: procs.ServiceAccountKubeconfig(t, cl.RESTConfig(), logDir),
		QPS:        qps, Burst: qps, Extra: []string{"--quarantine-time-budget", budget.String()},
	}, memoryLimit, "quarantinetest")
	for i := range replicas {
		w.fleet.Start(t, fmt.Sprintf("r%d", i))
	}
	w.waitRing(t)
	return w
}

func (w *world) waitRing(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := procs.WaitRing(ctx, w.fleet.Replicas(), 2*time.Minute); err != nil {
		t.Fatal(err)
	}
}

// TestSlowPausedAndRecreatedWorkIsNotPoison: see the package's doc.
func TestSlowPausedAndRecreatedWorkIsNotPoison(t *testing.T) {
	cluster.RequireTools(t)
	w := startWorld(t)
	slow := vcjob.Namespace(t, w.kube, "slow")
	beside := vcjob.Namespace(t, w.kube, "beside")

	start := time.Now()
	big := vcjob.Create(t, w.vc, vcjob.New(slow, "big", vcjob.Task("worker", bigPods, "1h", "")))
	w.waitPhase(t, slow, "big", 4*time.Minute, batch.Running)
	t.Logf("a Job of %d pods Running %v after its create, at %d requests a second per replica", bigPods, time.Since(start).Round(time.Second), qps)

	holder := w.holderOf(t, slow+"/big")
	abortAt := time.Now()
	cmd := &bus.Command{
		ObjectMeta: metav1.ObjectMeta{Namespace: slow, Name: "abort-big"},
		Action:     string(bus.AbortJobAction),
		TargetObject: &metav1.OwnerReference{
			APIVersion: batch.SchemeGroupVersion.String(), Kind: "Job", Name: big.Name, UID: big.UID,
		},
	}
	if _, err := w.vc.BusV1alpha1().Commands(slow).Create(context.Background(), cmd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vcjob.Create(t, w.vc, vcjob.New(beside, "small", vcjob.Task("worker", 2, "1s", "")))

	// The holder stops in the middle of the kill's first reconcile, for longer than the
	// budget and its lease: the others take its slots over, and it wakes with that run in
	// flight for longer than the budget.
	time.Sleep(5 * time.Second)
	r := w.fleet.Replica(holder)
	if err := r.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(pauseFor)
	if err := r.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s, the holder of the aborted Job, stopped %v after the abort for %v", holder, 5*time.Second, pauseFor)

	w.waitPhase(t, beside, "small", 2*time.Minute, batch.Completed)
	t.Logf("the Job of the other namespace completed %v after its create", time.Since(abortAt).Round(time.Second))
	w.waitPhase(t, slow, "big", 4*time.Minute, batch.Aborted)
	left := vcjob.PodsOf(t, w.kube, slow, "big")
	for deadline := time.Now().Add(3 * time.Minute); left > 0 && time.Now().Before(deadline); left = vcjob.PodsOf(t, w.kube, slow, "big") {
		time.Sleep(time.Second)
	}
	if left > 0 {
		t.Errorf("%d pods of the aborted Job left 3 min after it was Aborted", left)
	}
	t.Logf("the abort of %d pods done (Aborted, no pod left) %v after the Command", bigPods, time.Since(abortAt).Round(time.Second))
	time.Sleep(2 * time.Second) // a mark the woken replica would write is written by now
	if marks := w.marks(t); len(marks) > 0 {
		t.Errorf("marks after a slow abort and a paused replica: %v", marks)
	}
	for _, ev := range vcjob.EventsOn(t, w.kube, slow, "Job", "big") {
		if ev.Reason == "Quarantined" {
			t.Errorf("the aborted Job was quarantined: %s", ev.Message)
		}
	}

	w.recreatedWhileDown(t, beside)
	w.fleet.Audit(t, memoryLimit)
}

// recreatedWhileDown quarantines a Job (its mark, as its replica would write it), takes every
// replica down, deletes the Job and makes it again under its name, brings the replicas back,
// and waits for the new Job to complete and the old mark to go.
func (w *world) recreatedWhileDown(t *testing.T, ns string) {
	t.Helper()
	old := vcjob.Create(t, w.vc, vcjob.New(ns, "again", vcjob.Task("worker", 2, "1h", "")))
	w.waitPhase(t, ns, "again", 2*time.Minute, batch.Running)
	mark, _ := json.Marshal(shard.Mark{Member: "r0", Incarnation: "gone", Reason: "quarantinetest's mark", Since: time.Now().UTC(), UID: string(old.UID)})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := w.etcd.Put(ctx, prefix+"/quarantine/job/"+ns+"/again", string(mark)); err != nil {
		t.Fatal(err)
	}
	// A label's change is no release, but brings the Job to its holder, which finds the mark:
	// its status then says so.
	patch := []byte(`{"metadata":{"labels":{"poked":"1"}}}`)
	if _, err := w.vc.BatchV1alpha1().Jobs(ns).Patch(ctx, "again", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var st batch.JobState
	for deadline := time.Now().Add(30 * time.Second); st.Reason != "Quarantined" && time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		job, err := w.vc.BatchV1alpha1().Jobs(ns).Get(ctx, "again", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st = job.Status.State
	}
	if st.Reason != "Quarantined" || st.Phase != batch.Running {
		t.Errorf("the marked Job's state %+v; want Running, reason Quarantined", st)
	}

	ids := make([]string, replicas)
	for i := range ids {
		ids[i] = fmt.Sprintf("r%d", i)
		w.fleet.Kill(t, ids[i])
	}
	if err := w.vc.BatchV1alpha1().Jobs(ns).Delete(ctx, "again", metav1.DeleteOptions{PropagationPolicy: ptrTo(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := w.vc.BatchV1alpha1().Jobs(ns).Get(ctx, "again", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the Job deleted while every replica was down is still there: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	again := vcjob.Create(t, w.vc, vcjob.New(ns, "again", vcjob.Task("worker", 2, "1s", "")))
	for _, id := range ids {
		w.fleet.Restart(t, id)
	}
	w.waitRing(t)
	got := w.waitPhase(t, ns, "again", 2*time.Minute, batch.Completed)
	if got.UID != again.UID || got.Status.Succeeded != 2 {
		t.Errorf("the Job made again: uid %s succeeded %d; want %s with its 2 pods", got.UID, got.Status.Succeeded, again.UID)
	}
	for deadline := time.Now().Add(30 * time.Second); len(w.marks(t)) > 0; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("the mark of the Job deleted while every replica was down is still there: %v", w.marks(t))
			break
		}
	}
	t.Logf("the Job deleted while every replica was down and made again under its name completed; its predecessor's mark is gone")
}

// holderOf is the replica holding key's slot.
func (w *world) holderOf(t *testing.T, key string) string {
	t.Helper()
	slot := shard.SlotOf(key, slots)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range replicas {
		id := fmt.Sprintf("r%d", i)
		st, err := w.fleet.Replica(id).Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(st.Held, slot) {
			return id
		}
	}
	t.Fatalf("no replica holds slot %d of %s", slot, key)
	return ""
}

// marks lists the quarantine marks in the ring's etcd.
func (w *world) marks(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := w.etcd.Get(ctx, prefix+"/quarantine/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, strings.TrimPrefix(string(kv.Key), prefix+"/quarantine/")+" "+string(kv.Value))
	}
	return out
}

// waitPhase waits for the Job to reach phase and returns it.
func (w *world) waitPhase(t *testing.T, ns, name string, limit time.Duration, phase batch.JobPhase) *batch.Job {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		job, err := w.vc.BatchV1alpha1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		cancel()
		if err == nil && job.Status.State.Phase == phase {
			return job
		}
		if time.Now().After(deadline) {
			var got any = err
			if err == nil {
				got = job.Status.State
			}
			t.Fatalf("Job %s/%s not %s after %v: %v", ns, name, phase, limit, got)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func ptrTo[T any](v T) *T { return &v }
