package deploytest

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// settleMargin is what the ring may take beyond TTL + 1 s to settle after a
// fault before the test fails: pods start, probes pass and the kubelet
// reports them on a loaded 2-core machine. The measured times are logged.
const settleMargin = 30 * time.Second

// faultResult is one fault's numbers.
type faultResult struct {
	name    string
	start   time.Time
	settled time.Duration // from the fault until the ring is settled again
	note    string
	// etcdLeaderMayGo is set when the fault may take the etcd leader with a
	// replica (a whole node lost): the new leader renews every lease
	// (etcdLeaderChange), so the lost replica's lease runs out later.
	etcdLeaderMayGo bool
	// from and to are the stretch of the run the fault answers for: from the
	// end of the fault before (or of the first settle) to its own end. Its
	// stretches without a live holder are judged once the run is over, when
	// every stretch that began in it has ended.
	from, to time.Time
}

// etcdLeaderChange is what a lost etcd leader adds to a lease's life with
// etcd's defaults (election timeout 1 s): up to two timeouts before a
// follower calls an election, and the new leader extends every lease by one
// more, so that no lease expires for want of a leader to renew it.
const etcdLeaderChange = 3 * time.Second

// gapBound is the longest a slot may have no live holder in a fault, at
// least (gap.lower): the lease TTL + 1 s, and etcd's leader change where the
// fault may take the leader.
func gapBound(ttl time.Duration, r faultResult) time.Duration {
	b := ttl + time.Second
	if r.etcdLeaderMayGo {
		b += etcdLeaderChange
	}
	return b
}

// TestDeployment runs ringfire as deployed (the StatefulSet and the ring's
// etcd of deploy/), checks it works, then puts it through the faults an
// operator or a cluster makes — a replica pod deleted and force-deleted,
// scaled 3→5→2→3, a rolling restart, an etcd member's pod deleted, the node
// of a replica drained — all through kubectl, under a steady load of Jobs,
// and audits what no fault may break: no pod created twice, every Job
// Completed, no slot held by two replicas, no slot without a live holder
// past the lease TTL + 1 s (gapBound), each fault settled.
func TestDeployment(t *testing.T) {
	tg := openTarget(t)

	sts := tg.waitStatefulSet(t, "ringfire-etcd", 3, 5*time.Minute)
	t.Logf("etcd: %d members ready", sts.Status.ReadyReplicas)
	sts = tg.waitStatefulSet(t, "ringfire", 3, 5*time.Minute)
	ttl := leaseTTL(t, sts)
	ring := watchRing(tg.kube, newStatusReader(t, tg), tg.ns, 250*time.Millisecond)
	t.Cleanup(ring.stop)
	three := replicaNames("ringfire", 3)
	took := waitSettled(t, ring, three, 2*time.Minute)
	t.Logf("ringfire: 3 replicas ready, ring settled %v after they were (lease TTL %v)", took.Round(time.Millisecond), ttl)

	if tg.via == "helm" {
		t.Run("the ring status NOTES tells of", func(t *testing.T) { tg.notesRingStatus(t, 3) })
	}
	if tg.local != nil {
		t.Run("samples complete", func(t *testing.T) { tg.samplesComplete(t) })
	}

	prevEnd := time.Now() // the ring settled: from here on every stretch is judged
	l := startLoad(t, tg, 300*time.Millisecond, 100000)
	time.Sleep(5 * time.Second) // Jobs under way
	limit := ttl + time.Second + settleMargin
	var results []faultResult
	run := func(name string, f func(t *testing.T) faultResult) {
		t.Run(name, func(t *testing.T) {
			r := f(t)
			r.name, r.from, r.to = name, prevEnd, time.Now()
			prevEnd = r.to
			results = append(results, r)
			t.Logf("%s: ring settled after %v %s", name, r.settled.Round(time.Millisecond), r.note)
		})
	}

	run("delete a replica pod", func(t *testing.T) faultResult {
		return tg.deletePod(t, ring, "ringfire-1", three, limit)
	})
	run("force-delete a replica pod", func(t *testing.T) faultResult {
		return tg.deletePod(t, ring, "ringfire-2", three, limit, "--grace-period=0", "--force")
	})
	run("scale 3 to 5", func(t *testing.T) faultResult { return tg.scale(t, ring, 5, 3*time.Minute) })
	run("scale 5 to 2", func(t *testing.T) faultResult { return tg.scale(t, ring, 2, limit) })
	run("scale 2 to 3", func(t *testing.T) faultResult { return tg.scale(t, ring, 3, 3*time.Minute) })
	run("rollout restart", func(t *testing.T) faultResult { return tg.rolloutRestart(t, ring) })
	run("delete an etcd member pod", func(t *testing.T) faultResult { return tg.deleteEtcdMember(t, ring, "ringfire-etcd-1") })
	run("drain a replica's node", func(t *testing.T) faultResult { return tg.drain(t, ring) })
	if cmd := nodeFault(); cmd != "" {
		run("lose a replica's node", func(t *testing.T) faultResult { return tg.loseNode(t, ring, cmd, limit) })
	}

	created, retries := l.createdCount()
	if stuck := l.waitCompleted(5 * time.Minute); len(stuck) > 0 {
		for _, name := range stuck[:min(3, len(stuck))] {
			t.Errorf("job %s not Completed:\n%s", name, tg.describeJob(name))
		}
		t.Fatalf("%d of %d Jobs not Completed 5 min after the load stopped: %v", len(stuck), created, stuck[:min(20, len(stuck))])
	}
	twice, pods := l.twice()
	if len(twice) > 0 {
		t.Errorf("%d pod names were created more than once, e.g. %v", len(twice), twice[:min(5, len(twice))])
	}
	if dup := ring.heldTwice(); len(dup) > 0 {
		t.Errorf("slots held by two replicas in two reads in a row: %v", dup)
	}
	// The stretches without a live holder, judged now that every one that
	// began in a fault has ended: each fault's, and those after the last.
	results = append(results, faultResult{name: "(after the faults)", from: prevEnd, to: time.Now()})
	var longest gap
	holderless := map[string]string{}
	for _, r := range results {
		g, ok, dropped := ring.longestGap(r.from, r.to)
		if dropped > 0 {
			t.Errorf("the ring watch kept %d stretches without a live holder and dropped %d: the audit is incomplete", maxGaps, dropped)
		}
		if !ok {
			holderless[r.name] = "-"
			continue
		}
		if g.lower > longest.lower {
			longest = g
		}
		bound := gapBound(ttl, r)
		holderless[r.name] = fmt.Sprintf("%v–%v (%v)", g.lower.Round(100*time.Millisecond), g.took.Round(100*time.Millisecond), bound)
		if g.lower > bound {
			t.Errorf("%s: slot %d had no live holder for at least %v (at most %v) from %s, more than %v; then %s",
				r.name, g.slot, g.lower.Round(time.Millisecond), g.took.Round(time.Millisecond), g.from.Format("15:04:05.000"), bound, g.why)
		}
	}
	results = results[:len(results)-1]
	pauses := l.pauses()
	t.Logf("load: %d Jobs (%d create attempts retried), all Completed; %d pods, none created twice; %d ring reads; longest a slot had no live holder: %v to %v (slot %d; TTL %v)",
		created, retries, pods, ring.rounds, longest.lower.Round(time.Millisecond), longest.took.Round(time.Millisecond), longest.slot, ttl)
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %12s  %-26s %s\n", "fault", "ring settled", "no live holder (bound)", "longest pause of a Job that began in it")
	for _, r := range results {
		p := longestIn(pauses, r.start, r.start.Add(r.settled))
		fmt.Fprintf(&b, "%-28s %12v  %-26s %s\n", r.name, r.settled.Round(100*time.Millisecond), holderless[r.name], p)
	}
	fmt.Fprintf(&b, "%-28s %12s  %-26s\n", "(after the faults)", "", holderless["(after the faults)"])
	if len(pauses) > 0 {
		p := pauses[0]
		fmt.Fprintf(&b, "longest pause of any Job: %v (%s, %s, at %s); median %v\n", p.took.Round(time.Millisecond), p.job, p.what,
			p.at.Format("15:04:05"), pauses[len(pauses)/2].took.Round(time.Millisecond))
	}
	how := "as deployed"
	if tg.via != "" {
		how = "installed with " + tg.via
	}
	t.Logf("faults (ringfire %s):\n%s", how, b.String())
}

// notesRingStatus runs the `ringfire ring status` command the chart's NOTES
// print (`helm get notes`), through kubectl exec into a replica, and checks
// that it reads a ring of n members from the ring's etcd.
func (tg *target) notesRingStatus(t *testing.T, n int) {
	notes := tg.helm(t, "get", "notes", "ringfire", "--namespace", tg.ns)
	var cmd []string
	for _, line := range strings.Split(notes, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "kubectl" && strings.Contains(line, " ring status ") {
			cmd = f[1:]
		}
	}
	if cmd == nil {
		t.Fatalf("the NOTES print no ring status command:\n%s", notes)
	}
	out := tg.kubectlRun(t, cmd...)
	if want := fmt.Sprintf(", %d members,", n); !strings.Contains(out, want) {
		t.Errorf("kubectl %s: want %q in\n%s", strings.Join(cmd, " "), want, out)
	}
	t.Logf("kubectl %s:\n%s", strings.Join(cmd, " "), out)
}

// longestIn describes the longest pause that began in [from, to].
func longestIn(ps []pause, from, to time.Time) string {
	for _, p := range ps { // longest first
		if !p.at.Before(from) && !p.at.After(to) {
			return fmt.Sprintf("%v (%s: %s)", p.took.Round(time.Millisecond), p.job, p.what)
		}
	}
	return "-"
}

// leaseTTL reads --lease-ttl from the StatefulSet's arguments.
func leaseTTL(t *testing.T, sts *appsv1.StatefulSet) time.Duration {
	for _, a := range sts.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--lease-ttl="); ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("--lease-ttl %q: %v", v, err)
			}
			return d
		}
	}
	return 10 * time.Second // ringfire run's default
}

// waitStatefulSet waits until the StatefulSet has n ready replicas, all of
// the current revision.
func (tg *target) waitStatefulSet(t *testing.T, name string, n int32, limit time.Duration) *appsv1.StatefulSet {
	t.Helper()
	start := time.Now()
	deadline := start.Add(limit)
	probed := false
	for {
		sts, err := tg.kube.AppsV1().StatefulSets(tg.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && sts.Status.ObservedGeneration >= sts.Generation && sts.Status.ReadyReplicas == n &&
			sts.Status.UpdatedReplicas == n && sts.Status.Replicas == n && sts.Status.CurrentRevision == sts.Status.UpdateRevision {
			return sts
		}
		// On the local real node, pods slow to get ready may be pods that
		// cannot reach each other (the host's firewall): probe the pod
		// network once, and say so now rather than at the limit.
		if tg.local != nil && !probed && time.Since(start) > podNetworkProbeAfter {
			probed = true
			if err := tg.local.CheckPodNetwork(context.Background()); err != nil {
				t.Fatalf("statefulset %s: %d of %d ready after %v, and %v\n%s", name, readyOf(sts), n,
					time.Since(start).Round(time.Second), err, tg.podsSummary())
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("statefulset %s: not %d ready replicas of one revision after %v (%v): %s\n%s", name, n, limit, err,
				statusOf(sts), tg.podsSummary())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// podNetworkProbeAfter is how long waitStatefulSet waits for ready pods on
// the local real node before it probes their network.
const podNetworkProbeAfter = 20 * time.Second

func readyOf(sts *appsv1.StatefulSet) int32 {
	if sts == nil {
		return 0
	}
	return sts.Status.ReadyReplicas
}

func statusOf(sts *appsv1.StatefulSet) string {
	if sts == nil {
		return ""
	}
	s := sts.Status
	return fmt.Sprintf("replicas %d ready %d updated %d current %s update %s", s.Replicas, s.ReadyReplicas, s.UpdatedReplicas, s.CurrentRevision, s.UpdateRevision)
}

// podsSummary lists the namespace's pods with phase, readiness and node.
func (tg *target) podsSummary() string {
	pods, err := tg.kube.CoreV1().Pods(tg.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "  %s %s ready=%v node=%s deleting=%v\n", p.Name, p.Status.Phase, podReady(&p), p.Spec.NodeName, p.DeletionTimestamp != nil)
	}
	return b.String()
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitSettled waits until the ring is settled with the replicas named want
// and returns how long that took.
func waitSettled(t *testing.T, ring *ringWatch, want []string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var lag string
	for time.Since(start) < limit {
		v := ring.view()
		if v.at.After(start) {
			if lag = v.settledLag(want); lag == "" {
				return v.at.Sub(start)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("ring not settled with %v within %v: %s", want, limit, lag)
	return 0
}

// deletePod deletes a replica's pod with kubectl and waits until the
// StatefulSet's new pod of that name is in a settled ring.
func (tg *target) deletePod(t *testing.T, ring *ringWatch, name string, want []string, limit time.Duration, flags ...string) faultResult {
	old := tg.podUID(t, name)
	start := time.Now()
	tg.kubectlRun(t, append([]string{"-n", tg.ns, "delete", "pod", name, "--wait=false"}, flags...)...)
	tg.waitNewPod(t, name, old, 3*time.Minute)
	waitSettled(t, ring, want, limit+time.Minute)
	return faultResult{start: start, settled: time.Since(start)}
}

func (tg *target) podUID(t *testing.T, name string) types.UID {
	p, err := tg.kube.CoreV1().Pods(tg.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p.UID
}

// waitNewPod waits until pod name exists with another UID than old and is Ready.
func (tg *target) waitNewPod(t *testing.T, name string, old types.UID, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		p, err := tg.kube.CoreV1().Pods(tg.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && p.UID != old && podReady(p) {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("pod %s not back and Ready within %v:\n%s", name, limit, tg.podsSummary())
}

// scale sets the replica count with kubectl scale and waits for the ring of
// that many.
func (tg *target) scale(t *testing.T, ring *ringWatch, n int, limit time.Duration) faultResult {
	start := time.Now()
	tg.kubectlRun(t, "-n", tg.ns, "scale", "statefulset", "ringfire", fmt.Sprintf("--replicas=%d", n))
	waitSettled(t, ring, replicaNames("ringfire", n), limit)
	return faultResult{start: start, settled: time.Since(start)}
}

// rolloutRestart restarts every replica, one at a time, as kubectl rollout
// restart does, and waits for the rollout and the ring.
func (tg *target) rolloutRestart(t *testing.T, ring *ringWatch) faultResult {
	start := time.Now()
	tg.kubectlRun(t, "-n", tg.ns, "rollout", "restart", "statefulset", "ringfire")
	tg.kubectlRun(t, "-n", tg.ns, "rollout", "status", "statefulset", "ringfire", "--timeout=5m")
	rolled := time.Since(start)
	waitSettled(t, ring, replicaNames("ringfire", 3), 2*time.Minute)
	return faultResult{start: start, settled: time.Since(start), note: fmt.Sprintf("(rollout done after %v)", rolled.Round(time.Millisecond))}
}

// deleteEtcdMember deletes one etcd member's pod; the member comes back on
// its volume and rejoins. The ring must stay settled: two members are a
// quorum.
func (tg *target) deleteEtcdMember(t *testing.T, ring *ringWatch, name string) faultResult {
	old := tg.podUID(t, name)
	start := time.Now()
	tg.kubectlRun(t, "-n", tg.ns, "delete", "pod", name, "--wait=false")
	unsettled := time.Duration(0)
	var since time.Time
	deadline := time.Now().Add(3 * time.Minute)
	for {
		v := ring.view()
		if lag := v.settledLag(replicaNames("ringfire", 3)); lag != "" {
			if since.IsZero() {
				since = time.Now()
			}
		} else if !since.IsZero() {
			unsettled += time.Since(since)
			since = time.Time{}
		}
		p, err := tg.kube.CoreV1().Pods(tg.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && p.UID != old && podReady(p) && since.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd member %s not back and Ready, or the ring not settled, within 3 min:\n%s", name, tg.podsSummary())
		}
		time.Sleep(250 * time.Millisecond)
	}
	back := time.Since(start)
	return faultResult{start: start, settled: unsettled,
		note: fmt.Sprintf("(time the ring was not settled; member back and Ready after %v)", back.Round(time.Millisecond))}
}

// drain drains the node ringfire-0 runs on with kubectl drain. Where that
// node is the only one the replicas and members may run on (the local real
// node, a one-node kind cluster), the evicted pods cannot come back and the
// PodDisruptionBudgets stop the drain after one replica and one member: the
// test checks that they held — never two replicas or two members evicted at
// once — and that the ring settled over the replicas left. Then it uncordons
// the node and waits for all to be back.
func (tg *target) drain(t *testing.T, ring *ringWatch) faultResult {
	p, err := tg.kube.CoreV1().Pods(tg.ns).Get(context.Background(), "ringfire-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node := p.Spec.NodeName
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := tg.kubectlTry("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=40s")
		done <- err
	}()
	var drainErr error
	worst := map[string]int{}
	// The ring must settle over the replicas left while the drain runs: the
	// first read, after a replica went, in which it is.
	var evicted time.Time
	var settled time.Duration
	checkRing := func() {
		v := runningView(ring.view())
		if evicted.IsZero() && len(v.pods) < 3 {
			evicted = v.at
		}
		if settled == 0 && !evicted.IsZero() && v.at.After(evicted) && len(v.pods) >= 2 && v.settledLag(podNames(v.pods)) == "" {
			settled = v.at.Sub(start)
		}
	}
	for running := true; running; {
		select {
		case drainErr = <-done:
			running = false
		case <-time.After(250 * time.Millisecond):
		}
		for _, set := range []string{"ringfire", "ringfire-etcd"} {
			if down := tg.unavailable(t, set, 3); down > worst[set] {
				worst[set] = down
			}
		}
		checkRing()
	}
	for set, down := range worst {
		if down > 1 {
			t.Errorf("%s: %d pods unavailable at once during the drain; its PodDisruptionBudget allows 1", set, down)
		}
	}
	for deadline := time.Now().Add(2 * time.Minute); settled == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			v := runningView(ring.view())
			t.Fatalf("ring not settled over the replicas left during the drain within 2 min: %s", v.settledLag(podNames(v.pods)))
		}
		checkRing()
	}
	outcome := "drain completed"
	if drainErr != nil {
		outcome = "drain stopped by the PodDisruptionBudgets (one node)"
	}
	tg.kubectlRun(t, "uncordon", node)
	tg.waitStatefulSet(t, "ringfire-etcd", 3, 3*time.Minute)
	tg.waitStatefulSet(t, "ringfire", 3, 3*time.Minute)
	waitSettled(t, ring, replicaNames("ringfire", 3), 2*time.Minute)
	return faultResult{start: start, settled: settled,
		note: fmt.Sprintf("over the replicas left, %v after the first eviction (%s; at most %d replica and %d member down at once; all back %v after the drain began)",
			(settled - evicted.Sub(start)).Round(time.Millisecond), outcome, worst["ringfire"], worst["ringfire-etcd"], time.Since(start).Round(time.Millisecond))}
}

// runningView is v without the pods that do not run: the evicted replica's
// successor waits, Pending, for a node, and a pod being deleted is leaving.
func runningView(v ringView) ringView {
	var pods []corev1.Pod
	for _, p := range v.pods {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			pods = append(pods, p)
		}
	}
	v.pods = pods
	return v
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// unavailable counts the pods of a StatefulSet of n that are missing or not Ready.
func (tg *target) unavailable(t *testing.T, name string, n int) int {
	pods, err := tg.kube.CoreV1().Pods(tg.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
	if err != nil {
		return 0 // an API hiccup is not a disruption
	}
	ready := 0
	for _, p := range pods.Items {
		if podReady(&p) && p.DeletionTimestamp == nil {
			ready++
		}
	}
	return n - ready
}

// sampleJobs are the Jobs deploy/examples makes at once: three of its own and
// the three steps of its JobFlow (its CronJob's runs come and go).
var sampleJobs = []string{"mpi-gang", "pytorch-mnist", "spark-like", "etl-extract-users", "etl-extract-orders", "etl-merge"}

// samplesComplete applies deploy/examples with kubectl and waits until their
// Jobs, the JobFlow's among them, complete on the fake nodes; then deletes them.
func (tg *target) samplesComplete(t *testing.T) {
	start := time.Now()
	tg.kubectlRun(t, "apply", "-f", filepath.Join(repoRoot(), "deploy", "examples"))
	deadline := time.Now().Add(4 * time.Minute)
	for {
		jobs, err := tg.vc.BatchV1alpha1().Jobs("default").List(context.Background(), metav1.ListOptions{})
		phase := map[string]batch.JobPhase{}
		if err == nil {
			for _, j := range jobs.Items {
				phase[j.Name] = j.Status.State.Phase
			}
		}
		var left []string
		for _, name := range sampleJobs {
			if phase[name] != batch.Completed {
				left = append(left, fmt.Sprintf("%s=%q", name, phase[name]))
			}
		}
		if len(left) == 0 {
			t.Logf("the %d sample Jobs Completed %v after kubectl apply", len(sampleJobs), time.Since(start).Round(time.Second))
			tg.kubectlRun(t, "delete", "-f", filepath.Join(repoRoot(), "deploy", "examples"), "--wait=false")
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sample Jobs not Completed after 4 min: %v (%v)", left, err)
		}
		time.Sleep(time.Second)
	}
}

// describeJob tells what the API server has of a load Job and its pods.
func (tg *target) describeJob(name string) string {
	out, _ := tg.kubectlTry("-n", loadNS, "get", "vcjob,podgroup,pod", "-o", "wide", "-l", "volcano.sh/job-name="+name)
	j, _ := tg.kubectlTry("-n", loadNS, "get", "vcjob", name, "-o", "yaml")
	return out + j
}
