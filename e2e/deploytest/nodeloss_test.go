package deploytest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeFaultEnv names a command that kills and starts a whole node of the
// cluster: `CMD kill NODE`, then `CMD start NODE`. e2e/kind/run.sh sets it to
// e2e/kind/node.sh (docker kill and docker start of a kind node). With it the
// suite adds the one fault a cluster of real machines has and the others do
// not: a node lost with a replica and an etcd member on it, and back.
const NodeFaultEnv = "RINGFIRE_DEPLOY_NODE_FAULT"

// loseNode kills the node of a replica that shares it with an etcd member,
// checks the ring settles over the replicas left (the lost replica's lease
// runs out; the two other members keep the ring's quorum), then starts the
// node again and waits for all replicas and members to be back in a settled
// ring. The lost pods stay in the API the whole time, as they do when a
// machine dies: nothing but their node's return brings them back.
func (tg *target) loseNode(t *testing.T, ring *ringWatch, cmd string, limit time.Duration) faultResult {
	pods, err := tg.kube.CoreV1().Pods(tg.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	members := map[string]string{} // node => etcd member on it
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Name, "ringfire-etcd-") {
			members[p.Spec.NodeName] = p.Name
		}
	}
	var node string
	for _, name := range replicaNames("ringfire", 3) {
		for _, p := range pods.Items {
			if p.Name == name && members[p.Spec.NodeName] != "" {
				node = p.Spec.NodeName
				break
			}
		}
		if node != "" {
			break
		}
	}
	if node == "" {
		t.Fatalf("no replica shares a node with an etcd member:\n%s", tg.podsSummary())
	}
	// The replicas left: those on other nodes (the scheduler may have put
	// two on the one lost).
	var left, lost []string
	for _, name := range replicaNames("ringfire", 3) {
		on := ""
		for _, p := range pods.Items {
			if p.Name == name {
				on = p.Spec.NodeName
			}
		}
		if on == node {
			lost = append(lost, name)
		} else {
			left = append(left, name)
		}
	}
	if len(left) == 0 {
		t.Fatalf("every replica runs on %s:\n%s", node, tg.podsSummary())
	}
	t.Logf("killing node %s (replicas %v, member %s)", node, lost, members[node])
	start := time.Now()
	nodeCommand(t, cmd, "kill", node)
	started := false
	defer func() {
		if !started {
			nodeCommand(t, cmd, "start", node) // leave the cluster whole for what follows
		}
	}()

	// Settled over the replicas left: the lost one's pod is still listed (its
	// node is gone, not its object) and does not answer; leave it out.
	var settled time.Duration
	var lag string
	for deadline := start.Add(limit + time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		v := ring.view()
		if !v.at.After(start) {
			continue
		}
		v.pods = slices.DeleteFunc(slices.Clone(v.pods), func(p corev1.Pod) bool { return slices.Contains(lost, p.Name) })
		if lag = v.settledLag(left); lag == "" {
			settled = v.at.Sub(start)
			break
		}
	}
	if settled == 0 {
		t.Fatalf("ring not settled over %v within %v of losing node %s: %s", left, limit+time.Minute, node, lag)
	}

	back := time.Now()
	nodeCommand(t, cmd, "start", node)
	started = true
	tg.waitStatefulSet(t, "ringfire-etcd", 3, 5*time.Minute)
	tg.waitStatefulSet(t, "ringfire", 3, 5*time.Minute)
	waitSettled(t, ring, replicaNames("ringfire", 3), 3*time.Minute)
	return faultResult{start: start, settled: settled, etcdLeaderMayGo: members[node] != "",
		note: fmt.Sprintf("over %v (node %s killed with %v and %s; started again after, all 3 back and settled %v later)",
			left, node, lost, members[node], time.Since(back).Round(time.Millisecond))}
}

// nodeCommand runs the node fault command, failing the test if it fails.
func nodeCommand(t *testing.T, cmd, verb, node string) {
	t.Helper()
	out, err := exec.Command(cmd, verb, node).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s %s: %v\n%s", cmd, verb, node, err, out)
	}
}

// nodeFault is the node fault command, or "" where the cluster has none.
func nodeFault() string { return os.Getenv(NodeFaultEnv) }
