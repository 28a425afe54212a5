package certtest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/deploy"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/e2e/standin"
	"github.com/ringfire/ringfire/e2e/vcjob"
	"github.com/ringfire/ringfire/internal/certs"
	iprocs "github.com/ringfire/ringfire/internal/procs"
)

const (
	ns     = "default"
	prefix = "/certtest"
	slots  = 256
	// leaseTTL is the replicas' (the default): no slot may stay without a holder longer.
	leaseTTL = 5 * time.Second
	// firstValidity is how long the first leaves live: they end in the middle of the test, so
	// whatever still used them after the renewal would fail its next handshake.
	firstValidity = 75 * time.Second
	jobs          = 45
)

// TestRenewedCertificatesAndALostMember runs the ring's etcd as three TLS members and three
// replicas under a Job load, then (a) renews the leaves in place and (b) loses a member's data
// and brings it back by the runbook of docs/operations.md; see doc.go.
func TestRenewedCertificatesAndALostMember(t *testing.T) {
	tools := cluster.RequireTools(t)
	bin := procs.Build(t)
	dir := t.TempDir()
	cl := cluster.StartForTest(t, cluster.Options{Nodes: 4})
	_, vc := standin.StartForTest(t, cl, 200)
	setup, done := context.WithTimeout(context.Background(), time.Minute)
	defer done()
	if err := deploy.InstallRBAC(setup, cl.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	kubeconfig := procs.ServiceAccountKubeconfig(t, cl.RESTConfig(), dir)

	// `ringfire certs | kubectl apply -f -`, and kubelet's writing of the two mounted Secrets
	// into the members' and the replicas' directories. The leaves end in firstValidity.
	first := apply(t, dir, run(t, bin, nil, "certs", "--validity", firstValidity.String()))
	issued := time.Now()
	caSecret, err := yaml.Marshal(first[caSecretName])
	if err != nil {
		t.Fatal(err)
	}
	files := mountedFiles(dir)
	etcd := newCluster3(t, dir, bin, filepath.Join(tools, "etcd"), files)
	for _, m := range etcd.members {
		etcd.start(t, m)
	}
	etcd.healthy(t, 30*time.Second)
	for _, m := range etcd.members {
		if !strings.Contains(iprocs.Tail(m.logPath, 1000), "--initial-cluster-state=new") {
			t.Errorf("member %s did not start as one of a new cluster:\n%s", m.name, iprocs.Tail(m.logPath, 5))
		}
	}

	args := procs.Args{
		Bin: bin, Etcd: etcd.endpoints(), Prefix: prefix, Kubeconfig: kubeconfig, LogDir: dir,
		Slots: slots, LeaseTTL: leaseTTL,
		Extra: []string{"--etcd-ca", filepath.Join(dir, "client", "ca.crt"), "--etcd-cert", files.ClientCert, "--etcd-key", files.ClientKey},
	}
	var replicas []*procs.Replica
	t.Cleanup(func() {
		procs.StopAll(t, replicas)
		if t.Failed() {
			for _, r := range replicas {
				t.Logf("replica %s log tail:\n%s", r.ID, r.LogTail(30))
			}
		}
	})
	for i := range 3 {
		replicas = append(replicas, procs.Start(t, args, fmt.Sprintf("r%d", i)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := procs.WaitRing(ctx, replicas, time.Minute); err != nil {
		t.Fatal(err)
	}
	pids := map[string]int{}
	for _, r := range replicas {
		pids[r.ID] = r.PID()
	}
	// The audit of slot holders and the Jobs' load, from here to the end. The test's own
	// client talks to m0 and m2 only, so that m1's traffic after it rejoins is the replicas'.
	observer := etcd.client(t, etcd.endpoints(etcd.members[0], etcd.members[2]))
	gaps := watchUnowned(ctx, observer, prefix, slots)
	var names []string
	var namesMu sync.Mutex
	stopLoad := vcjob.Paced(2*time.Second, jobs, 4, func(i int) {
		job := vcjob.New(ns, fmt.Sprintf("cert-%02d", i), vcjob.Task("worker", 2, "2s", ""))
		if _, err := vcjob.CreateRetrying(vc, job, 30*time.Second); err != nil {
			t.Error(err)
			return
		}
		namesMu.Lock()
		names = append(names, job.Name)
		namesMu.Unlock()
	})
	t.Cleanup(stopLoad)
	time.Sleep(5 * time.Second)

	// What the replicas report before the renewal.
	before := expiries(t, ctx, replicas[0])
	if d := before["etcd-client"].Sub(issued); d > firstValidity || d < firstValidity-time.Minute {
		t.Errorf("replica %s reports the client certificate ending %v after issue, want %v", replicas[0].ID, d, firstValidity)
	}

	// (a) The runbook: `kubectl get secret ringfire-etcd-ca -o yaml | ringfire certs --renew
	// --ca - | kubectl apply -f -`; kubelet then swaps each mounted Secret's files in one rename.
	probeCfg, err := transport.TLSInfo{CertFile: files.ClientCert, KeyFile: files.ClientKey, TrustedCAFile: files.CA}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	oldServer := mustLeaf(t, ctx, probeCfg, etcd.members[0])
	oldClient := fileSerial(t, files.ClientCert)
	if renewedSecrets := apply(t, dir, run(t, bin, caSecret, "certs", "--renew", "--ca", "-")); len(renewedSecrets) != 2 {
		t.Errorf("the renewal printed %d Secrets, want the server's and the client's", len(renewedSecrets))
	}
	renewed := time.Now()
	newClient := fileSerial(t, files.ClientCert)
	if newClient.Cmp(oldClient) == 0 {
		t.Fatal("the renewal left the client certificate as it was")
	}
	// Every member presents the new certificate in its next handshake (made with a TLS
	// configuration built before the renewal, as a running replica's is, so that the client
	// certificate it presents is the renewed file too).
	var newServer *big.Int
	for _, m := range etcd.members {
		var seen *big.Int
		for seen == nil || seen.Cmp(oldServer.SerialNumber) == 0 {
			leaf, err := serverLeaf(ctx, probeCfg, m)
			if err == nil {
				seen = leaf.SerialNumber
			}
			if time.Since(renewed) > 10*time.Second {
				t.Fatalf("member %s still presents serial %x 10 s after the renewal (%v)", m.name, oldServer.SerialNumber, err)
			}
			if seen == nil || seen.Cmp(oldServer.SerialNumber) == 0 {
				time.Sleep(20 * time.Millisecond)
			}
		}
		newServer = seen
		t.Logf("member %s presents the renewed certificate (serial %x, was %x) %v after the renewal", m.name, seen, oldServer.SerialNumber, time.Since(renewed).Round(time.Millisecond))
	}
	// The replicas' metric shows the renewed files and the server's renewed certificate within
	// its minute.
	for _, r := range replicas {
		deadline := time.Now().Add(75 * time.Second)
		for {
			e := expiries(t, ctx, r)
			if time.Until(e["etcd-client"]) > 300*24*time.Hour && time.Until(e["etcd-server"]) > 300*24*time.Hour {
				t.Logf("replica %s reports the renewed client and server certificates %v after the renewal", r.ID, time.Since(renewed).Round(time.Second))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %s still reports %v 75 s after the renewal", r.ID, e)
			}
			time.Sleep(2 * time.Second)
		}
	}

	// (b) The first leaves have ended: from here any handshake with them fails. m1 loses its
	// data; the runbook (docs/operations.md#a-lost-etcd-member), step for step.
	time.Sleep(time.Until(issued.Add(firstValidity + time.Second)))
	lost := etcd.members[1]
	lost.kill()
	if err := os.RemoveAll(lost.dataDir); err != nil {
		t.Fatal(err)
	}
	lostAt := time.Now()
	admin := observer
	// `etcdctl member list`, `etcdctl member remove <id>`.
	id := memberID(t, ctx, admin, lost.name)
	if _, err := admin.MemberRemove(ctx, id); err != nil {
		t.Fatalf("member remove %x: %v", id, err)
	}
	// Started now, removed and not added, it refuses rather than bootstrap a cluster of its own.
	if why := etcd.refusal(t, lost); !strings.Contains(why, "was removed") {
		t.Errorf("a removed member with no data started or refused for another reason: %q", why)
	}
	// `etcdctl member add m1 --peer-urls=<its peer URL>`, then the pod starts again.
	added, err := admin.MemberAdd(ctx, []string{lost.peerURL})
	if err != nil {
		t.Fatalf("member add: %v", err)
	}
	etcd.start(t, lost)
	restarted := time.Now()
	rejoin := waitRejoined(t, ctx, admin, lost, added.Member.ID)
	log := iprocs.Tail(lost.logPath, 2000)
	if !strings.Contains(log, "--initial-cluster-state=existing") {
		t.Errorf("member %s did not start as existing:\n%s", lost.name, iprocs.Tail(lost.logPath, 10))
	}
	t.Logf("member %s rejoined %v after its data was lost (%v after it started again)", lost.name, time.Since(lostAt).Round(time.Millisecond), rejoin.Round(time.Millisecond))

	// The replicas reach the rejoined member, over connections made after the first leaves
	// ended, so with the renewed client certificate: m1 answers gRPC calls, and none is the
	// test's (its clients talk to m0 and m2).
	waitFor(t, 30*time.Second, "replicas' requests at "+lost.name, func() bool {
		return metricSum(t, ctx, lost.metrics, "grpc_server_handled_total") > 0
	})
	t.Logf("member %s answered the replicas' gRPC calls %v after it started again", lost.name, time.Since(restarted).Round(time.Millisecond))

	// Every Job completes; nothing restarted; no slot went without a holder past the lease.
	stopLoad()
	namesMu.Lock()
	created := append([]string(nil), names...)
	namesMu.Unlock()
	phases := waitCompleted(t, ctx, vc, created, 90*time.Second)
	for _, name := range created {
		if phases[name] != batch.Completed {
			t.Errorf("Job %s ended %q, want Completed", name, phases[name])
		}
	}
	cancel()
	for _, r := range replicas {
		if r.Exited() || r.PID() != pids[r.ID] {
			t.Errorf("replica %s exited or restarted", r.ID)
		}
		if n := metricOf(t, r, "ringfire_fencing_events_total"); n > 0 {
			t.Errorf("replica %s fenced %v times", r.ID, n)
		}
	}
	for _, m := range etcd.members {
		if m.exited() {
			t.Errorf("member %s exited", m.name)
		}
		// A client that hangs up mid-handshake (a dial given up on a busy machine) is logged as a
		// rejected connection too, with "connection reset by peer" or "EOF"; a certificate
		// refused names it ("tls: ...", "certificate ...").
		if bad := certificateRejections(iprocs.Tail(m.logPath, 100000)); len(bad) > 0 {
			t.Errorf("member %s rejected %d TLS connections for their certificates:\n%s", m.name, len(bad), strings.Join(bad, "\n"))
		}
	}
	longest, slot, polls, errs := gaps.report()
	if longest > leaseTTL {
		t.Errorf("slot %d went %v without a holder, past the lease TTL %v", slot, longest, leaseTTL)
	}
	t.Logf("%d Jobs Completed; longest a slot went without a holder: %v (slot %d; %d polls of the slot keys, %d unanswered); server serial now %x",
		len(created), longest.Round(time.Millisecond), slot, polls, errs, newServer)
}

// run runs the ringfire binary with stdin and returns its standard output; a failure fails
// the test.
func run(t *testing.T, bin string, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ringfire %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// The Secrets of `ringfire certs` (cmd/ringfire/certs.go), and the directories they are
// "mounted" at here: server for the members, client for the replicas.
const (
	serverSecretName = "ringfire-etcd-server"
	clientSecretName = "ringfire-etcd-client"
	caSecretName     = "ringfire-etcd-ca"
)

// apply plays `kubectl apply -f -` and kubelet for the Secrets certs printed: each mounted
// Secret's keys are written into its directory as kubelet writes a Secret volume (one
// rename of ..data swaps them all). It returns the Secrets by name.
func apply(t *testing.T, dir string, printed []byte) map[string]corev1.Secret {
	t.Helper()
	secrets := map[string]corev1.Secret{}
	for _, doc := range strings.Split(string(printed), "\n---\n") {
		var s corev1.Secret
		if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
			t.Fatalf("%v in:\n%s", err, doc)
		}
		secrets[s.Name] = s
	}
	for name, sub := range map[string]string{serverSecretName: "server", clientSecretName: "client"} {
		s, ok := secrets[name]
		if !ok {
			t.Fatalf("no Secret %s in:\n%s", name, printed)
		}
		files := map[string][]byte{}
		for key, data := range s.Data {
			files[filepath.Join(dir, sub, key)] = data
		}
		if err := certs.WriteDir(filepath.Join(dir, sub), files); err != nil {
			t.Fatal(err)
		}
	}
	return secrets
}

// mountedFiles are the files of the two mounted Secrets, as the manifests name them.
func mountedFiles(dir string) certs.Files {
	return certs.Files{
		CA:         filepath.Join(dir, "server", "ca.crt"),
		ServerCert: filepath.Join(dir, "server", "tls.crt"), ServerKey: filepath.Join(dir, "server", "tls.key"),
		ClientCert: filepath.Join(dir, "client", "tls.crt"), ClientKey: filepath.Join(dir, "client", "tls.key"),
	}
}

// memberID is the id of the member named name (`etcdctl member list`).
func memberID(t *testing.T, ctx context.Context, cl *clientv3.Client, name string) uint64 {
	t.Helper()
	list, err := cl.MemberList(ctx)
	if err != nil {
		t.Fatalf("member list: %v", err)
	}
	for _, m := range list.Members {
		if m.Name == name {
			return m.ID
		}
	}
	t.Fatalf("no member %s in %v", name, list.Members)
	return 0
}

// waitRejoined waits until m, added as id, has started (the others list it by name with its
// client URL) and is ready (its /readyz, on the metrics URL: no gRPC call of the test's reaches
// m); it returns how long after its start.
func waitRejoined(t *testing.T, ctx context.Context, others *clientv3.Client, m *member, id uint64) time.Duration {
	t.Helper()
	start := time.Now()
	waitFor(t, 60*time.Second, m.name+" to rejoin", func() bool {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		list, err := others.MemberList(c)
		if err != nil {
			return false
		}
		started := false
		for _, mm := range list.Members {
			started = started || (mm.ID == id && mm.Name == m.name && len(mm.ClientURLs) > 0)
		}
		if !started {
			return false
		}
		req, err := http.NewRequestWithContext(c, http.MethodGet, m.metrics+"/readyz", nil)
		if err != nil {
			return false
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return time.Since(start)
}

func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitCompleted waits until every Job of names is in a final phase, or limit passes, and
// returns the phase of each.
func waitCompleted(t *testing.T, ctx context.Context, vc vcclient.Interface, names []string, limit time.Duration) map[string]batch.JobPhase {
	t.Helper()
	final := map[batch.JobPhase]bool{batch.Completed: true, batch.Failed: true, batch.Aborted: true, batch.Terminated: true}
	phases := map[string]batch.JobPhase{}
	deadline := time.Now().Add(limit)
	for {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		list, err := vc.BatchV1alpha1().Jobs(ns).List(c, metav1.ListOptions{})
		cancel()
		if err == nil {
			for _, j := range list.Items {
				phases[j.Name] = j.Status.State.Phase
			}
		}
		finished := 0
		for _, name := range names {
			if final[phases[name]] {
				finished++
			}
		}
		if finished == len(names) || time.Now().After(deadline) {
			return phases
		}
		time.Sleep(time.Second)
	}
}

// mustLeaf is the certificate m presents now.
func mustLeaf(t *testing.T, ctx context.Context, cfg *tls.Config, m *member) *x509.Certificate {
	t.Helper()
	leaf, err := serverLeaf(ctx, cfg, m)
	if err != nil {
		t.Fatalf("handshake with %s: %v", m.name, err)
	}
	return leaf
}

// fileSerial is the serial of the certificate in a PEM file.
func fileSerial(t *testing.T, path string) *big.Int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber
}

// metricSum sums a metric of an etcd member's /metrics.
func metricSum(t *testing.T, ctx context.Context, base, name string) float64 {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(c, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0
	}
	v, _ := procs.MetricValue(string(body), name)
	return v
}

var expiryLine = regexp.MustCompile(`(?m)^` + certs.ExpiryMetric + `\{certificate="([^"]+)"\} (\S+)$`)

// expiries are the certificate ends replica r reports.
func expiries(t *testing.T, ctx context.Context, r *procs.Replica) map[string]time.Time {
	t.Helper()
	body, _, err := r.Get(ctx, "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]time.Time{}
	for _, m := range expiryLine.FindAllStringSubmatch(body, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err == nil {
			out[m[1]] = time.Unix(int64(v), 0)
		}
	}
	return out
}

func metricOf(t *testing.T, r *procs.Replica, name string) float64 {
	t.Helper()
	body, _, err := r.Get(context.Background(), "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := procs.MetricValue(body, name)
	return v
}

// certificateRejections are the lines of an etcd member's log that say it rejected a
// connection for its certificate.
func certificateRejections(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "rejected connection") && (strings.Contains(line, "tls:") || strings.Contains(line, "certificate")) {
			out = append(out, line)
		}
	}
	return out
}
