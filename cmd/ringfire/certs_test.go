package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/e2e/procs"
	"github.com/ringfire/ringfire/internal/certs"
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
	expiry := with.certificateExpiry([]string{clientURL})
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
	// The expiry metric has the two files and the server's certificate from the handshake.
	seen := expiry.Expiries()
	for _, name := range []string{"etcd-ca", "etcd-client", "etcd-server"} {
		if until := time.Until(seen[name]); until < 364*24*time.Hour {
			t.Errorf("certificate %s expires in %s, want about a year or more (all: %v)", name, until, seen)
		}
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

// `ringfire certs` prints the two Secrets the manifests mount, mounted whole (a subPath mount
// is never updated by kubelet, so a renewal would not reach the pods), and the CA's, which
// no manifest mounts.
func TestCertsPrintsTheSecretsTheManifestsMount(t *testing.T) {
	var out bytes.Buffer
	if err := certsTo(nil, &out, nil); err != nil {
		t.Fatal(err)
	}
	manifests := map[string]string{}
	for _, f := range []string{"../../deploy/etcd/10-statefulset.yaml", "../../deploy/ringfire/30-statefulset.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		manifests[f] = string(b)
		if strings.Contains(string(b), "subPath:") {
			t.Errorf("%s mounts with subPath: kubelet would not update a renewed Secret there", f)
		}
	}
	secrets := parseSecrets(t, out.Bytes())
	for _, name := range []string{etcdServerSecret, etcdClientSecret, etcdCASecret} {
		s, ok := secrets[name]
		if !ok {
			t.Errorf("no Secret %s in:\n%s", name, out.String())
			continue
		}
		mounted := false
		for _, m := range manifests {
			mounted = mounted || strings.Contains(m, "secretName: "+name)
		}
		if want := name != etcdCASecret; mounted != want {
			t.Errorf("Secret %s: mounted by a manifest %v, want %v", name, mounted, want)
		}
		keys := []string{"ca.crt", "tls.crt", "tls.key"}
		if name == etcdCASecret {
			keys = []string{"ca.crt", "ca.key"}
		}
		for _, key := range keys {
			if len(s.Data[key]) == 0 {
				t.Errorf("Secret %s has no %s", name, key)
			}
		}
		if len(s.Data) != len(keys) {
			t.Errorf("Secret %s has keys %v, want %v", name, slices.Sorted(maps.Keys(s.Data)), keys)
		}
	}
	if secrets[etcdServerSecret].Type != corev1.SecretTypeTLS || secrets[etcdClientSecret].Type != corev1.SecretTypeTLS {
		t.Error("the server and client Secrets are not of type kubernetes.io/tls")
	}
}

// `kubectl get secret ringfire-etcd-ca -o yaml | ringfire certs --renew --ca -` prints new
// server and client Secrets, in the CA Secret's namespace, signed by the same CA, so that
// members and replicas that trust the old ones trust them; it prints no CA Secret. The JSON
// kubectl prints with -o json does as well.
func TestCertsRenewIssuesLeavesUnderTheSameCA(t *testing.T) {
	var first bytes.Buffer
	if err := certsTo(nil, &first, []string{"--namespace", "batch-system"}); err != nil {
		t.Fatal(err)
	}
	old := parseSecrets(t, first.Bytes())
	caSecret := old[etcdCASecret]
	asYAML, err := yaml.Marshal(caSecret)
	if err != nil {
		t.Fatal(err)
	}
	asJSON, err := json.Marshal(caSecret)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.json")
	if err := os.WriteFile(caFile, asJSON, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		stdin []byte
		args  []string
	}{
		{"yaml on stdin", asYAML, []string{"--renew", "--ca", "-"}},
		{"json in a file", nil, []string{"--renew", "--ca", caFile}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := certsTo(bytes.NewReader(tc.stdin), &out, tc.args); err != nil {
				t.Fatal(err)
			}
			renewed := parseSecrets(t, out.Bytes())
			if len(renewed) != 2 {
				t.Fatalf("renew printed %d Secrets, want the server's and the client's:\n%s", len(renewed), out.String())
			}
			for _, name := range []string{etcdServerSecret, etcdClientSecret} {
				s := renewed[name]
				if s.Namespace != "batch-system" {
					t.Errorf("%s in namespace %q, want the CA Secret's, batch-system", name, s.Namespace)
				}
				if !bytes.Equal(s.Data["ca.crt"], caSecret.Data["ca.crt"]) {
					t.Errorf("%s carries another CA", name)
				}
				newLeaf, oldLeaf := leaf(t, s.Data["tls.crt"]), leaf(t, old[name].Data["tls.crt"])
				if newLeaf.SerialNumber.Cmp(oldLeaf.SerialNumber) == 0 {
					t.Errorf("%s: the renewed certificate has the old serial", name)
				}
				verifyUnder(t, caSecret.Data["ca.crt"], newLeaf)
				if _, err := tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"]); err != nil {
					t.Errorf("%s: certificate and key do not match: %v", name, err)
				}
			}
			if !slices.Equal(leaf(t, renewed[etcdServerSecret].Data["tls.crt"]).DNSNames, leaf(t, old[etcdServerSecret].Data["tls.crt"]).DNSNames) {
				t.Error("the renewed server certificate names other hosts")
			}
		})
	}
}

// --renew --dir renews a set in place: new server and client files, the same CA, every name
// a link through ..data, swapped in one rename as kubelet does.
func TestCertsRenewInADirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	if err := certsTo(nil, io.Discard, []string{"--dir", dir}); err != nil {
		t.Fatal(err)
	}
	files := certs.FilesIn(dir)
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ca, server, client := read(files.CA), read(files.ServerCert), read(files.ClientCert)
	if err := certsTo(nil, io.Discard, []string{"--renew", "--dir", dir}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(files.CA), ca) || len(read(files.CAKey)) == 0 {
		t.Error("renewing changed or dropped the CA")
	}
	for path, before := range map[string][]byte{files.ServerCert: server, files.ClientCert: client} {
		after := leaf(t, read(path))
		if after.SerialNumber.Cmp(leaf(t, before).SerialNumber) == 0 {
			t.Errorf("%s was not renewed", path)
		}
		verifyUnder(t, ca, after)
		if target, err := os.Readlink(path); err != nil || target != filepath.Join("..data", filepath.Base(path)) {
			t.Errorf("%s is not a link through ..data (%q, %v)", path, target, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 8 { // six links, ..data and one generation
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %v: an old generation was left behind", dir, names)
	}
}

func TestCertsRenewNeedsTheCA(t *testing.T) {
	for _, args := range [][]string{
		{"--renew"},
		{"--ca", "-"},
		{"--renew", "--dir", t.TempDir()}, // no ca.crt there
	} {
		if err := certsTo(strings.NewReader(""), io.Discard, args); err == nil {
			t.Errorf("certs %v did not fail", args)
		}
	}
	other, err := certs.NewAuthority("another CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var first bytes.Buffer
	if err := certsTo(nil, &first, nil); err != nil {
		t.Fatal(err)
	}
	caSecret := parseSecrets(t, first.Bytes())[etcdCASecret]
	caSecret.Data["ca.key"] = other.KeyPEM
	mixed, err := yaml.Marshal(caSecret)
	if err != nil {
		t.Fatal(err)
	}
	if err := certsTo(bytes.NewReader(mixed), io.Discard, []string{"--renew", "--ca", "-"}); err == nil || !strings.Contains(err.Error(), "does not belong") {
		t.Errorf("a CA key of another CA: %v", err)
	}
}

// parseSecrets reads the YAML stream certs prints, by Secret name.
func parseSecrets(t *testing.T, out []byte) map[string]corev1.Secret {
	t.Helper()
	secrets := map[string]corev1.Secret{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var s corev1.Secret
		if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
			t.Fatalf("%v in:\n%s", err, doc)
		}
		secrets[s.Name] = s
	}
	return secrets
}

func leaf(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatal("no PEM certificate")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func verifyUnder(t *testing.T, caPEM []byte, c *x509.Certificate) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("%s is not signed by the CA: %v", c.Subject.CommonName, err)
	}
}
