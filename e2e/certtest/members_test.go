package certtest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/internal/certs"
	iprocs "github.com/ringfire/ringfire/internal/procs"
)

// member is one etcd member process, started as deploy/etcd starts one: through
// `ringfire etcd-member -- etcd FLAGS`, with the StatefulSet's TLS flags (client and peer
// certificates required) on the files of a `ringfire certs --dir`.
type member struct {
	name                        string
	clientURL, peerURL, metrics string
	dataDir, logPath            string
	cmd                         *exec.Cmd
	done                        chan struct{}
}

// cluster3 is three members that know each other.
type cluster3 struct {
	members []*member
	tls     certs.Files
	ringBin string // the ringfire binary
	etcdBin string
}

func newCluster3(t *testing.T, dir, ringBin, etcdBin string, tlsFiles certs.Files) *cluster3 {
	t.Helper()
	c := &cluster3{tls: tlsFiles, ringBin: ringBin, etcdBin: etcdBin}
	port := func() int {
		p, err := procs.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for i := range 3 {
		name := fmt.Sprintf("m%d", i)
		c.members = append(c.members, &member{
			name:      name,
			clientURL: fmt.Sprintf("https://127.0.0.1:%d", port()),
			peerURL:   fmt.Sprintf("https://127.0.0.1:%d", port()),
			metrics:   fmt.Sprintf("http://127.0.0.1:%d", port()),
			dataDir:   filepath.Join(dir, name),
			logPath:   filepath.Join(dir, name+".log"),
		})
	}
	t.Cleanup(func() {
		for _, m := range c.members {
			m.kill()
		}
		if t.Failed() {
			for _, m := range c.members {
				t.Logf("member %s log tail:\n%s", m.name, iprocs.Tail(m.logPath, 30))
			}
		}
	})
	return c
}

// endpoints are the members' client URLs, comma-separated.
func (c *cluster3) endpoints(ms ...*member) string {
	if len(ms) == 0 {
		ms = c.members
	}
	var urls []string
	for _, m := range ms {
		urls = append(urls, m.clientURL)
	}
	return strings.Join(urls, ",")
}

// args is the etcd command line of m, as deploy/etcd/10-statefulset.yaml writes it.
func (c *cluster3) args(m *member) []string {
	var initial []string
	for _, o := range c.members {
		initial = append(initial, o.name+"="+o.peerURL)
	}
	return []string{c.etcdBin,
		"--name=" + m.name, "--data-dir=" + m.dataDir,
		"--listen-client-urls=" + m.clientURL, "--advertise-client-urls=" + m.clientURL,
		"--listen-peer-urls=" + m.peerURL, "--initial-advertise-peer-urls=" + m.peerURL,
		"--initial-cluster=" + strings.Join(initial, ","),
		"--initial-cluster-state=new", "--initial-cluster-token=ringfire-etcd",
		"--client-cert-auth", "--trusted-ca-file=" + c.tls.CA,
		"--cert-file=" + c.tls.ServerCert, "--key-file=" + c.tls.ServerKey,
		"--peer-client-cert-auth", "--peer-trusted-ca-file=" + c.tls.CA,
		"--peer-cert-file=" + c.tls.ServerCert, "--peer-key-file=" + c.tls.ServerKey,
		"--listen-metrics-urls=" + m.metrics,
	}
}

// start runs m through `ringfire etcd-member`, appending to its log.
func (c *cluster3) start(t *testing.T, m *member) {
	t.Helper()
	log, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	m.cmd = exec.Command(c.ringBin, append([]string{"etcd-member", "--"}, c.args(m)...)...)
	m.cmd.Stdout, m.cmd.Stderr = log, log
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		log.Close()
		close(done)
	}(m.cmd, m.done)
}

// refusal runs `ringfire etcd-member` for m and returns what it prints when it refuses to
// start etcd, or "" when it starts it (stopped after 20 s).
func (c *cluster3) refusal(t *testing.T, m *member) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.ringBin, append([]string{"etcd-member", "--peer-wait=2s", "--"}, c.args(m)...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// exited is whether m's process has ended.
func (m *member) exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// kill ends m's process (its data stays).
func (m *member) kill() {
	if m.cmd == nil || m.exited() {
		return
	}
	_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
	<-m.done
}

// client is an etcd client of endpoints with the client certificate, as ringfire's.
func (c *cluster3) client(t *testing.T, endpoints string) *clientv3.Client {
	t.Helper()
	cfg, err := transport.TLSInfo{CertFile: c.tls.ClientCert, KeyFile: c.tls.ClientKey, TrustedCAFile: c.tls.CA}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := clientv3.New(clientv3.Config{
		Endpoints: strings.Split(endpoints, ","), DialTimeout: 3 * time.Second, TLS: cfg, Logger: zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// serverLeaf is the certificate m presents in a new handshake, made with cfg.
func serverLeaf(ctx context.Context, cfg *tls.Config, m *member) (*x509.Certificate, error) {
	u, err := url.Parse(m.clientURL)
	if err != nil {
		return nil, err
	}
	d := tls.Dialer{Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.(*tls.Conn).ConnectionState().PeerCertificates[0], nil
}

// healthy waits until every member answers a linearizable read.
func (c *cluster3) healthy(t *testing.T, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for _, m := range c.members {
		cl := c.client(t, m.clientURL)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := cl.Get(ctx, "/certtest/health")
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %s not healthy after %v: %v", m.name, limit, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}
