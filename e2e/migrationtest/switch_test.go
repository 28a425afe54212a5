package migrationtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	busv1 "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/deploy"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/e2e/volcano"
	"github.com/ringfire/ringfire/internal/localetcd"
)

const (
	ns = "migrate"
	// replicas is how many ringfire replicas take over.
	replicas = 3
	// KeepEnv names an environment variable: set to a directory, the control
	// plane's state, its audit log and every program's log stay there.
	KeepEnv = "MIGRATION_DIR"
)

// stays is vc-controller-manager's --controllers beside ringfire: every controller of
// Volcano's but those ringfire serves (and the sharding controller, off by default).
const stays = "*,-job-controller,-queue-controller,-pg-controller,-cronjob-controller,-jobflow-controller,-jobtemplate-controller,-gc-controller,-sharding-controller"

// TestSwitchFromVolcanoAndBack is docs/migration.md, step by step, on a live cluster.
func TestSwitchFromVolcanoAndBack(t *testing.T) {
	vcbin, vccrds := volcano.Bin(t), volcano.CRDs(t)
	tools := cluster.RequireTools(t)
	bin := procs.Build(t)
	logDir, clusterDir := dirs(t)
	log := hclog.New(&hclog.LoggerOptions{Name: "migration", Level: hclog.Warn, Output: os.Stderr})
	cl := cluster.StartForTest(t, cluster.Options{
		Nodes: 4, NodePods: "250", AuditLog: true, Dir: clusterDir, Logger: log.Named("cluster"),
	})
	cfg := cl.RESTConfig()
	cfg.QPS, cfg.Burst = 500, 1000
	kube := kubernetes.NewForConfigOrDie(cfg)
	vc := vcclient.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	w := &world{t: t, ctx: ctx, kube: kube, vc: vc}

	// Before: Volcano as a Helm release installs it, its CRDs included, running 200 Jobs.
	crdNames, err := volcano.InstallCRDsAsHelm(ctx, cl.RESTConfig(), vccrds)
	if err != nil {
		t.Fatal(err)
	}
	vcm := volcano.Start(t, vcbin, logDir, cl.Kubeconfig(), "vc-controller-manager")
	volcano.Start(t, vcbin, logDir, cl.Kubeconfig(), "vc-scheduler", "--scheduler-conf", volcano.SchedulerConf(t), "--cache-dumper=false")
	w.waitQueueOpen("default", 2*time.Minute)
	w.setUp()
	start := time.Now()
	jobs := w.createWave1()
	w.waitSwitchable(jobs, 3*time.Minute)
	t.Logf("the Jobs are where the switch should find them %v after they were made", time.Since(start).Round(time.Second))
	before := w.snapshot()
	beforeJobs := w.jobs()

	// Step 1: stop vc-controller-manager (in a cluster: scale its Deployment to 0).
	vcm.Stop()
	switchAt := time.Now()
	// Meanwhile a user gives Commands that no controller takes yet.
	commands := w.command(jobs, func(k kind) busv1.Action { return k.outstanding })

	// Step 2: ringfire's RBAC and replicas, on Volcano's CRDs as they are.
	if err := deploy.InstallRBAC(ctx, cl.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	kubeconfig := serviceAccountKubeconfig(t, cl, logDir)
	ring := localetcd.StartForTest(t)
	args := procs.Args{Bin: bin, Etcd: ring.Endpoint(), Kubeconfig: kubeconfig, LogDir: logDir, Slots: 256}
	var rs []*procs.Replica
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			procs.StopAll(t, rs)
		}
		if t.Failed() {
			for _, r := range rs {
				fmt.Fprintf(os.Stderr, "=== %s failed: replica %s log tail:\n%s\n", t.Name(), r.ID, r.LogTail(30))
			}
		}
	})
	for i := range replicas {
		rs = append(rs, procs.Start(t, args, fmt.Sprintf("r%d", i)))
	}
	if err := procs.WaitRing(ctx, rs, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	ringAt := time.Now()
	t.Logf("ring of %d settled %v after vc-controller-manager stopped", replicas, ringAt.Sub(switchAt).Round(100*time.Millisecond))

	// Step 3: vc-controller-manager again, with only the controllers ringfire does not serve.
	vcmStays := volcano.Start(t, vcbin, logDir, cl.Kubeconfig(), "vc-controller-manager", "--controllers", stays)

	w.waitCommandsTaken(commands, 2*time.Minute)
	t.Logf("the %d Commands given while no controller ran were taken %v after the ring settled",
		len(commands), time.Since(ringAt).Round(100*time.Millisecond))
	w.waitAdopted(before, time.Minute)
	t.Logf("every object vc-controller-manager made carries its slot label %v after the ring settled", time.Since(ringAt).Round(100*time.Millisecond))
	// Room for the pending Jobs: they start under ringfire.
	w.makeRoom()

	// Step 4 (optional): ringfire's CRDs over Volcano's, while the Jobs run.
	conflicts := ssaConflicts(applyCRDs(t, tools, cl.Kubeconfig(), false))
	t.Logf("server-side apply of deploy/crds without --force-conflicts: conflicts %v", conflicts)
	for _, c := range conflicts {
		if !expectedConflicts[c] {
			t.Errorf("applying ringfire's CRDs over Helm's: conflict %q, not one docs/migration.md names", c)
		}
	}
	if len(conflicts) == 0 {
		t.Errorf("applying ringfire's CRDs over Helm's met no conflict; docs/migration.md says it does")
	}
	applyCRDs(t, tools, cl.Kubeconfig(), true)
	w.checkCRDsReplaced(cl.RESTConfig(), crdNames)
	w.checkNothingLost(beforeJobs)

	w.waitFinal(jobs, "wave1", 5*time.Minute)
	t.Logf("every Job of the first wave in its final phase %v after the switch", time.Since(switchAt).Round(time.Second))
	// Jobs made while ringfire runs: still running when Volcano comes back.
	jobs = append(jobs, w.createWave2()...)
	w.waitPhase(jobs, "wave2", batch.Running, 2*time.Minute)

	// The way back: ringfire stops, vc-controller-manager runs every controller again.
	procs.StopAll(t, rs)
	stopped = true
	vcmStays.Stop()
	backAt := time.Now()
	volcano.Start(t, vcbin, logDir, cl.Kubeconfig(), "vc-controller-manager")
	w.waitFinal(jobs, "wave2", 3*time.Minute)
	t.Logf("the Jobs ringfire started completed under vc-controller-manager %v after it came back", time.Since(backAt).Round(time.Second))

	// What the control plane recorded.
	w.checkFinal(jobs)
	rec := readAudit(t, cl.AuditLogPath())
	w.checkAudit(rec, jobs, before, switchAt, backAt)
}

// dirs returns where the replicas log and where the control plane keeps its state.
func dirs(t *testing.T) (logDir, clusterDir string) { return procs.Dirs(t, KeepEnv) }

// serviceAccountKubeconfig writes a kubeconfig of ringfire's ServiceAccount.
func serviceAccountKubeconfig(t *testing.T, cl *cluster.Cluster, dir string) string {
	return procs.ServiceAccountKubeconfig(t, cl.RESTConfig(), dir)
}

// applyCRDs runs docs/migration.md's apply of deploy/crds with the pinned kubectl, as the
// field manager "ringfire", and returns its output. Without force it expects the apply to
// fail on conflicts; with force it must succeed (tried again while the Queues' CRD is new).
func applyCRDs(t *testing.T, tools, kubeconfig string, force bool) string {
	t.Helper()
	root := volcano.RepoRoot(t)
	args := []string{"--kubeconfig", kubeconfig, "apply", "--server-side", "--field-manager=ringfire", "-k", filepath.Join(root, "deploy", "crds")}
	if force {
		args = append(args, "--force-conflicts")
	}
	var out []byte
	var err error
	for range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err = exec.CommandContext(ctx, filepath.Join(tools, "kubectl"), args...).CombinedOutput()
		cancel()
		if !force || err == nil {
			break
		}
		time.Sleep(2 * time.Second)
	}
	if force && err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if !force && err == nil {
		t.Errorf("kubectl %s succeeded without --force-conflicts:\n%s", strings.Join(args, " "), out)
	}
	return string(out)
}

// expectedConflicts are the conflicts docs/migration.md says a server-side apply of ringfire's
// CRDs over those of Volcano's Helm release meets, as "manager field".
var expectedConflicts = map[string]bool{
	"helm .metadata.annotations.controller-gen.kubebuilder.io/version": true,
	"helm .spec.versions": true,
}

// ssaConflicts returns the distinct conflicts kubectl's output reports, as "manager field".
func ssaConflicts(out string) []string {
	seen := map[string]bool{}
	var manager string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if i := strings.Index(line, ` with "`); i >= 0 && strings.HasPrefix(line, "Apply failed") {
			rest := line[i+len(` with "`):]
			manager = rest[:strings.Index(rest, `"`)]
			if j := strings.LastIndex(rest, ": ."); j >= 0 { // a single conflict, on this line
				seen[manager+" "+rest[j+2:]] = true
			}
			continue
		}
		if strings.HasPrefix(line, "- .") && manager != "" {
			seen[manager+" "+line[2:]] = true
		}
	}
	out2 := make([]string, 0, len(seen))
	for c := range seen {
		out2 = append(out2, c)
	}
	sort.Strings(out2)
	return out2
}

// world is the cluster as the test sees it.
type world struct {
	t    *testing.T
	ctx  context.Context
	kube kubernetes.Interface
	vc   vcclient.Interface
}

// job is one Job of the test and its kind.
type job struct {
	name string
	kind kind
	wave string
}

func (w *world) setUp() {
	t := w.t
	if _, err := w.kube.CoreV1().Namespaces().Create(w.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// makeRoom adds a fake node of 400 CPUs: the pending Jobs' pods fit there.
func (w *world) makeRoom() {
	const name = "kwok-node-big"
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("400"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: resource.MustParse("250"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64", "type": "kwok",
			},
			Annotations: map[string]string{cluster.KWOKNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
		},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res.DeepCopy()},
	}
	if _, err := w.kube.CoreV1().Nodes().Create(w.ctx, node, metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

// waitQueueOpen waits until Queue name says Open.
func (w *world) waitQueueOpen(name string, limit time.Duration) {
	w.until(limit, "Queue "+name+" Open", func() (bool, string) {
		q, err := w.vc.SchedulingV1beta1().Queues().Get(w.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return q.Status.State == scheduling.QueueStateOpen, fmt.Sprintf("state %q", q.Status.State)
	})
}

// until polls cond every 250 ms for at most limit; past it the test fails with cond's last
// word on what it waits for.
func (w *world) until(limit time.Duration, what string, cond func() (bool, string)) {
	w.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) || w.ctx.Err() != nil {
			w.t.Fatalf("%s: not so after %v: %s", what, limit, why)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// createWave1 creates the Jobs of every kind, in parallel; once those with a Command to
// take under Volcano run, it gives it.
func (w *world) createWave1() []job {
	var jobs []job
	for _, k := range kinds {
		for i := range k.count {
			jobs = append(jobs, job{name: fmt.Sprintf("%s-%d", k.name, i), kind: k, wave: "wave1"})
		}
	}
	w.create(jobs)
	w.waitPhase(jobs, "resume-before", batch.Running, 2*time.Minute)
	w.command(jobs, func(k kind) busv1.Action { return k.before })
	return jobs
}

func (w *world) createWave2() []job {
	var jobs []job
	for i := range 20 {
		jobs = append(jobs, job{name: fmt.Sprintf("back-%d", i), wave: "wave2",
			kind: kind{name: "back", final: batch.Completed, keepsPods: true, job: wave2}})
	}
	w.create(jobs)
	return jobs
}

func (w *world) create(jobs []job) {
	t := w.t
	var wg sync.WaitGroup
	errs := make(chan error, len(jobs))
	next := make(chan job)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				// As Volcano's admission webhook leaves a new Job: it stays beside ringfire, on
				// either CRDs (docs/migration.md), but is not among Volcano's programs here.
				vj := j.kind.job(j.name)
				state.Defaults(vj)
				if _, err := w.vc.BatchV1alpha1().Jobs(ns).Create(w.ctx, vj, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create Job %s: %w", j.name, err)
				}
			}
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// jobs returns every Job of the namespace by name.
func (w *world) jobs() map[string]*batch.Job {
	w.t.Helper()
	list, err := w.vc.BatchV1alpha1().Jobs(ns).List(w.ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]*batch.Job{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// waitPhase waits until every Job of the group (a wave, or "resume-before": the Jobs with
// a Command for Volcano) is in phase.
func (w *world) waitPhase(jobs []job, group string, phase batch.JobPhase, limit time.Duration) {
	w.t.Helper()
	w.until(limit, "every Job of "+group+" "+string(phase), func() (bool, string) {
		all := w.jobs()
		var off []string
		for _, j := range jobs {
			if !inGroup(j, group) {
				continue
			}
			if got := all[j.name]; got == nil || got.Status.State.Phase != phase {
				off = append(off, j.name+" "+phaseOf(got))
			}
		}
		return len(off) == 0, summarize(off)
	})
}

func inGroup(j job, group string) bool {
	if group == "resume-before" {
		return j.kind.before != ""
	}
	return j.wave == group
}

func phaseOf(j *batch.Job) string {
	if j == nil {
		return "(missing)"
	}
	return fmt.Sprintf("%s (retries %d)", j.Status.State.Phase, j.Status.RetryCount)
}

func summarize(items []string) string {
	if len(items) > 12 {
		return fmt.Sprintf("%d, first: %s", len(items), strings.Join(items[:12], ", "))
	}
	return strings.Join(items, ", ")
}

// waitSwitchable waits until every Job is where the switch should find it: running,
// mid-retry, aborted, pending.
func (w *world) waitSwitchable(jobs []job, limit time.Duration) {
	w.until(limit, "the Jobs ready for the switch", func() (bool, string) {
		all := w.jobs()
		var off []string
		for _, j := range jobs {
			got := all[j.name]
			if got != nil && got.Status.State.Phase == j.kind.final {
				w.t.Fatalf("%s reached its final phase %s under Volcano before every Job was ready for the switch; "+
					"the Jobs run too short for this machine", j.name, j.kind.final)
			}
			if got == nil || !j.kind.atSwitch(got) {
				off = append(off, j.name+" "+phaseOf(got))
			}
		}
		return len(off) == 0, summarize(off)
	})
}

// command gives each Job the Command action returns for its kind, if any, and returns
// the Commands' names.
func (w *world) command(jobs []job, action func(kind) busv1.Action) []string {
	all := w.jobs()
	var names []string
	for _, j := range jobs {
		a := action(j.kind)
		if a == "" {
			continue
		}
		target := all[j.name]
		cmd := &busv1.Command{
			ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(string(a)) + "-" + j.name, Namespace: ns},
			Action:     string(a),
			TargetObject: &metav1.OwnerReference{
				APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: j.name, UID: target.UID,
			},
		}
		if _, err := w.vc.BusV1alpha1().Commands(ns).Create(w.ctx, cmd, metav1.CreateOptions{}); err != nil {
			w.t.Fatalf("command %s: %v", cmd.Name, err)
		}
		names = append(names, cmd.Name)
	}
	return names
}

func (w *world) waitCommandsTaken(names []string, limit time.Duration) {
	w.until(limit, "the Commands taken", func() (bool, string) {
		var left []string
		for _, n := range names {
			if _, err := w.vc.BusV1alpha1().Commands(ns).Get(w.ctx, n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, n)
			}
		}
		return len(left) == 0, summarize(left)
	})
}

// waitFinal waits until every Job of wave is in its kind's final phase.
func (w *world) waitFinal(jobs []job, wave string, limit time.Duration) {
	w.t.Helper()
	var off []string
	defer func() {
		if w.t.Failed() {
			w.explain(off)
		}
	}()
	w.until(limit, "every Job of "+wave+" in its final phase", func() (bool, string) {
		all := w.jobs()
		var msgs []string
		off = off[:0]
		for _, j := range jobs {
			if j.wave != wave {
				continue
			}
			got := all[j.name]
			switch {
			case got == nil || got.Status.State.Phase != j.kind.final:
				off = append(off, j.name)
				msgs = append(msgs, fmt.Sprintf("%s %s, want %s", j.name, phaseOf(got), j.kind.final))
			case j.kind.retries > 0 && got.Status.RetryCount != j.kind.retries:
				// One Command, one restart: a second would count a retry.
				off = append(off, j.name)
				msgs = append(msgs, fmt.Sprintf("%s %s, want %d retries", j.name, phaseOf(got), j.kind.retries))
			}
		}
		return len(off) == 0, summarize(msgs)
	})
}

// explain logs what the control plane holds of the history of the Jobs
// named (the first three): each one's phase transitions and the Events of
// it and of its pods, so that a failure in CI says how a Job got where it
// is.
func (w *world) explain(names []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := w.vc.BatchV1alpha1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Logf("explain: jobs: %v", err)
		return
	}
	events, err := w.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Logf("explain: events: %v", err)
		return
	}
	slices.SortFunc(events.Items, func(a, b corev1.Event) int {
		return a.LastTimestamp.Time.Compare(b.LastTimestamp.Time)
	})
	for _, name := range names[:min(len(names), 3)] {
		var b strings.Builder
		if i := slices.IndexFunc(list.Items, func(j batch.Job) bool { return j.Name == name }); i >= 0 {
			j := &list.Items[i]
			fmt.Fprintf(&b, "%s: %s, version %d; transitions:", name, phaseOf(j), j.Status.Version)
			for _, c := range j.Status.Conditions {
				if c.LastTransitionTime != nil {
					fmt.Fprintf(&b, " %s@%s", c.Status, c.LastTransitionTime.Format("15:04:05"))
				}
			}
		}
		for _, e := range events.Items {
			o := e.InvolvedObject
			if o.Name == name || o.Kind == "Pod" && strings.HasPrefix(o.Name, name+"-") {
				fmt.Fprintf(&b, "\n  %s %s/%s %s %s (x%d, %s): %s", e.LastTimestamp.Format("15:04:05"), o.Kind, o.Name,
					e.Type, e.Reason, e.Count, e.Source.Component+e.ReportingController, e.Message)
			}
		}
		w.t.Logf("explain %s", b.String())
	}
}

// object is one object of the namespace: kind, name, UID and the Job that controls it.
type object struct {
	kind, name string
	uid        types.UID
	job        string
	labels     map[string]string
}

func (o object) String() string { return o.kind + "/" + o.name }

// snapshot returns every object a Job controls in the namespace, by UID.
func (w *world) snapshot() map[types.UID]object {
	t := w.t
	out := map[types.UID]object{}
	add := func(kind string, m metav1.ObjectMeta) {
		for _, ref := range m.OwnerReferences {
			if ref.Controller != nil && *ref.Controller && ref.Kind == "Job" && strings.HasPrefix(ref.APIVersion, "batch.volcano.sh/") {
				out[m.UID] = object{kind: kind, name: m.Name, uid: m.UID, job: ref.Name, labels: m.Labels}
			}
		}
	}
	pods, err := w.kube.CoreV1().Pods(ns).List(w.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range pods.Items {
		add("pods", o.ObjectMeta)
	}
	pgs, err := w.vc.SchedulingV1beta1().PodGroups(ns).List(w.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range pgs.Items {
		add("podgroups", o.ObjectMeta)
	}
	svcs, err := w.kube.CoreV1().Services(ns).List(w.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range svcs.Items {
		add("services", o.ObjectMeta)
	}
	cms, err := w.kube.CoreV1().ConfigMaps(ns).List(w.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range cms.Items {
		add("configmaps", o.ObjectMeta)
	}
	nps, err := w.kube.NetworkingV1().NetworkPolicies(ns).List(w.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range nps.Items {
		add("networkpolicies", o.ObjectMeta)
	}
	return out
}

// waitAdopted waits until every object of before that still exists carries the slot label.
func (w *world) waitAdopted(before map[types.UID]object, limit time.Duration) {
	w.until(limit, "every object vc-controller-manager made labelled with its slot", func() (bool, string) {
		now := w.snapshot()
		var off []string
		for uid, o := range before {
			if cur, ok := now[uid]; ok && cur.labels["ringfire.io/slot"] == "" {
				off = append(off, o.String())
			}
		}
		sort.Strings(off)
		return len(off) == 0, summarize(off)
	})
}

// checkNothingLost checks that every Job of before is still there, the same object.
func (w *world) checkNothingLost(before map[string]*batch.Job) {
	now := w.jobs()
	for name, j := range before {
		if got := now[name]; got == nil || got.UID != j.UID {
			w.t.Errorf("Job %s lost in the CRD replacement", name)
		}
	}
}

// checkFinal checks each Job's end beyond its phase: the pods of a Job that ran to the end
// all succeeded, one per replica; a Job restarted on failure retried maxRetry times.
func (w *world) checkFinal(jobs []job) {
	all := w.jobs()
	pods, err := w.kube.CoreV1().Pods(ns).List(w.ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	succeeded := map[string]int32{}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded {
			succeeded[p.Labels[batch.JobNameKey]]++
		}
	}
	for _, j := range jobs {
		got := all[j.name]
		switch {
		case j.kind.keepsPods:
			want := int32(0)
			for _, task := range j.kind.job(j.name).Spec.Tasks {
				want += task.Replicas
			}
			if succeeded[j.name] != want {
				w.t.Errorf("%s: %d pods succeeded, want %d", j.name, succeeded[j.name], want)
			}
		case j.kind.name == "retry":
			if got.Status.RetryCount != 4 {
				w.t.Errorf("%s: retried %d times, want 4 (maxRetry)", j.name, got.Status.RetryCount)
			}
		}
	}
}

// checkCRDsReplaced checks that every CRD ringfire ships is now ringfire's: its fields
// applied by the field manager "ringfire", while the other CRDs of Volcano's release stay as
// they were.
func (w *world) checkCRDsReplaced(cfg *rest.Config, names []string) {
	client := dynamic.NewForConfigOrDie(cfg)
	crdResource := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	ours := map[string]bool{
		"jobs.batch.volcano.sh": true, "cronjobs.batch.volcano.sh": true, "commands.bus.volcano.sh": true,
		"podgroups.scheduling.volcano.sh": true, "queues.scheduling.volcano.sh": true, "hypernodes.topology.volcano.sh": true,
		"jobflows.flow.volcano.sh": true, "jobtemplates.flow.volcano.sh": true,
	}
	for _, name := range names {
		crd, err := client.Resource(crdResource).Get(w.ctx, name, metav1.GetOptions{})
		if err != nil {
			w.t.Fatal(err)
		}
		applied := false
		for _, m := range crd.GetManagedFields() {
			if m.Manager == "ringfire" && m.Operation == metav1.ManagedFieldsOperationApply {
				applied = true
			}
		}
		if applied != ours[name] {
			w.t.Errorf("CRD %s: applied by ringfire %v, want %v", name, applied, ours[name])
		}
		if ours[name] {
			w.t.Logf("CRD %s after the apply: labels %v", name, crd.GetLabels())
		}
	}
}
