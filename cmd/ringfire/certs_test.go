package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
)

// `ringfire certs --dir` makes what a real etcd, run with the TLS flags of
// deploy/etcd/10-statefulset.yaml (client and peer certificates required), accepts from
// ringfire's etcd client; a client without the certificate is refused.
func TestCertsWorkWithARealEtcd(t *testing.T) {
	bin := cluster.RequireTools(t)
	dir := t.TempDir()
	if err := certsCommand([]string{"--dir", filepath.Join(dir, "tls")}); err != nil {
		t.Fatal(err)
	}
	tls := func(name string) string { return filepath.Join(dir, "tls", name) }
	clientPort, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	peerPort, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	clientURL := fmt.Sprintf("https://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("https://127.0.0.1:%d", peerPort)
	var log bytes.Buffer
	etcd := exec.Command(filepath.Join(bin, "etcd"),
		"--name=m0", "--data-dir="+filepath.Join(dir, "data"),
		"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=m0="+peerURL, "--initial-cluster-state=new",
		"--client-cert-auth", "--trusted-ca-file="+tls("ca.crt"),
		"--cert-file="+tls("server.crt"), "--key-file="+tls("server.key"),
		"--peer-client-cert-auth", "--peer-trusted-ca-file="+tls("ca.crt"),
		"--peer-cert-file="+tls("server.crt"), "--peer-key-file="+tls("server.key"),
	)
	etcd.Stdout, etcd.Stderr = &log, &log
	if err := etcd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = etcd.Process.Kill()
		_ = etcd.Wait()
		if t.Failed() {
			t.Logf("etcd log:\n%s", log.String())
		}
	})

	with := etcdFlags{caFile: tls("ca.crt"), certFile: tls("client.crt"), keyFile: tls("client.key")}
	client, err := with.client([]string{clientURL})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var putErr error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, putErr = client.Put(ctx, "/ringfire/certs-test", "ok")
		cancel()
		if putErr == nil {
			break
		}
	}
	if putErr != nil {
		t.Fatalf("put over TLS with the client certificate: %v", putErr)
	}

	without := etcdFlags{caFile: tls("ca.crt")}
	anon, err := without.client([]string{clientURL})
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := anon.Get(ctx, "/ringfire/certs-test"); err == nil {
		t.Fatal("a client without a certificate was let in")
	}
}

// `ringfire certs` prints the two Secrets the manifests mount.
func TestCertsPrintsTheSecretsTheManifestsMount(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	err = certsCommand(nil)
	os.Stdout = stdout
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := out.ReadFrom(r); err != nil {
		t.Fatal(err)
	}
	manifests := map[string]string{}
	for _, f := range []string{"../../deploy/etcd/10-statefulset.yaml", "../../deploy/ringfire/30-statefulset.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		manifests[f] = string(b)
	}
	for _, name := range []string{etcdServerSecret, etcdClientSecret} {
		if !strings.Contains(out.String(), "name: "+name) {
			t.Errorf("no Secret %s in:\n%s", name, out.String())
		}
		mounted := false
		for _, m := range manifests {
			mounted = mounted || strings.Contains(m, "secretName: "+name)
		}
		if !mounted {
			t.Errorf("Secret %s is mounted by no manifest", name)
		}
	}
	for _, key := range []string{"ca.crt:", "tls.crt:", "tls.key:", "type: kubernetes.io/tls"} {
		if strings.Count(out.String(), key) != 2 {
			t.Errorf("want %q in both Secrets:\n%s", key, out.String())
		}
	}
}
