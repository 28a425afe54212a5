package plugins

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"testing"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
)

func TestSSHConfig(t *testing.T) {
	fixed := task("ps", 2)
	fixed.Template.Spec.Hostname = "param"
	job := testJob(task("master", 1), task("worker", 2), fixed)
	want := "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n" +
		"Host train-master-0\n  HostName train-master-0.train\n  Port 2222\n" +
		"Host train-worker-0\n  HostName train-worker-0.train\n  Port 2222\n" +
		"Host train-worker-1\n  HostName train-worker-1.train\n  Port 2222\n" +
		"Host param\n  HostName param.train\n  Port 2222\n"
	if got := SSHConfig(job, 2222); got != want {
		t.Errorf("SSHConfig:\n%s\nwant:\n%s", got, want)
	}
}

func TestSSHSecret(t *testing.T) {
	job := testJob(task("master", 1), task("worker", 1))
	c, err := mustNew(t, "ssh").OnJobAdd(job)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Create) != 1 || len(c.Apply)+len(c.Delete) != 0 {
		t.Fatalf("changes %+v, want one Secret to create", c)
	}
	secret := c.Create[0].(*corev1.Secret)
	owned(t, secret, job)
	if secret.Name != "train-ssh" || secret.Kind != "Secret" {
		t.Errorf("Secret %s (%s)", secret.Name, secret.Kind)
	}
	equal(t, "Secret data", secret.Data, map[string][]byte{
		"id_rsa":          []byte("PRIVATE\n"),
		"id_rsa.pub":      []byte("ssh-rsa PUBLIC\n"),
		"authorized_keys": []byte("ssh-rsa PUBLIC\n"),
		"config":          []byte(SSHConfig(job, 22)),
	})

	c, _ = mustNew(t, "ssh", "--ssh-port=2200").OnJobAdd(job)
	if got := string(c.Create[0].(*corev1.Secret).Data["config"]); got != SSHConfig(job, 2200) {
		t.Errorf("config with --ssh-port=2200:\n%s", got)
	}

	c, err = mustNew(t, "ssh", "--ssh-private-key=MINE", "--ssh-public-key=ssh-rsa OURS").OnJobAdd(job)
	if err != nil {
		t.Fatal(err)
	}
	data := c.Create[0].(*corev1.Secret).Data
	if string(data["id_rsa"]) != "MINE" || string(data["id_rsa.pub"]) != "ssh-rsa OURS" || string(data["authorized_keys"]) != "ssh-rsa OURS" {
		t.Errorf("user keys not used: %q", data)
	}

	broken := func() (KeyPair, error) { return KeyPair{}, errors.New("no entropy") }
	p, _ := New("ssh", nil, Env{NewSSHKey: broken})
	if _, err := p.OnJobAdd(job); err == nil {
		t.Errorf("a failing key generator gives no error")
	}

	c, _ = mustNew(t, "ssh").OnJobUpdate(job)
	if len(c.Create)+len(c.Apply)+len(c.Delete) != 0 {
		t.Errorf("OnJobUpdate asks for %+v, want nothing", c)
	}
	c, _ = mustNew(t, "ssh").OnJobDelete(job)
	equal(t, "deleted", names(c.Delete), []string{"Secret ns/train-ssh"})
}

func TestSSHPod(t *testing.T) {
	for _, tc := range []struct {
		args []string
		path string
		mode int32
	}{
		{nil, "/root/.ssh", 0o600},
		// Elsewhere than root's home the files are readable by all, so a user who is not root can
		// read them.
		{[]string{"--ssh-key-file-path=/home/mpi/.ssh"}, "/home/mpi/.ssh", 0o644},
	} {
		job := testJob(task("worker", 2))
		pod := podOf(t, job, "worker", 0)
		if err := mustNew(t, "ssh", tc.args...).OnPodCreate(pod, job); err != nil {
			t.Fatal(err)
		}
		mode := tc.mode
		equal(t, "volumes", pod.Spec.Volumes, []corev1.Volume{{Name: "train-ssh", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: "train-ssh", DefaultMode: &mode, Items: []corev1.KeyToPath{
				{Key: "id_rsa", Path: ".ssh/id_rsa"},
				{Key: "id_rsa.pub", Path: ".ssh/id_rsa.pub"},
				{Key: "authorized_keys", Path: ".ssh/authorized_keys"},
				{Key: "config", Path: ".ssh/config"},
			}},
		}}})
		want := []corev1.VolumeMount{{Name: "train-ssh", MountPath: tc.path, SubPath: ".ssh"}}
		for _, c := range append(pod.Spec.Containers, pod.Spec.InitContainers...) {
			equal(t, c.Name+" mounts", c.VolumeMounts, want)
		}
	}
}

func TestRSAKeyPair(t *testing.T) {
	keys, err := RSAKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	block, rest := pem.Decode(keys.PrivateKey)
	if block == nil || block.Type != "RSA PRIVATE KEY" || len(rest) != 0 {
		t.Fatalf("private key is not one PKCS #1 PEM block: %q", keys.PrivateKey)
	}
	private, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if private.N.BitLen() != 2048 {
		t.Errorf("key of %d bits, want 2048", private.N.BitLen())
	}
	public, _, _, rest2, err := ssh.ParseAuthorizedKey(keys.PublicKey)
	if err != nil || len(rest2) != 0 || public.Type() != "ssh-rsa" {
		t.Fatalf("public key %q: %v", keys.PublicKey, err)
	}
	signer, err := ssh.NewSignerFromKey(private)
	if err != nil {
		t.Fatal(err)
	}
	if string(signer.PublicKey().Marshal()) != string(public.Marshal()) {
		t.Errorf("the public key is not the private key's")
	}
}
