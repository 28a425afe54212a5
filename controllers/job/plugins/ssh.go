package plugins

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/build"
)

// The ssh plugin's defaults and the files of its Secret.
const (
	DefaultSSHPath    = "/root/.ssh"
	DefaultSSHPort    = 22
	sshPrivateKeyFile = "id_rsa"
	sshPublicKeyFile  = "id_rsa.pub"
	sshAuthorizedKeys = "authorized_keys"
	sshConfigFile     = "config"
	// sshSecretDir is the directory of the files inside the Secret volume; the mount's subPath.
	sshSecretDir = ".ssh"
	sshKeyBits   = 2048
)

// KeyPair is an SSH key pair: the private key in PEM and the public key as an authorized_keys line.
type KeyPair struct {
	PrivateKey []byte
	PublicKey  []byte
}

// KeyGenerator makes a new key pair.
type KeyGenerator func() (KeyPair, error)

// RSAKeyPair makes the key pair Volcano's ssh plugin makes: RSA of 2048 bits, the private key in
// PKCS #1 PEM ("RSA PRIVATE KEY"), the public key as "ssh-rsa AAAA...\n".
func RSAKeyPair() (KeyPair, error) {
	key, err := rsa.GenerateKey(rand.Reader, sshKeyBits)
	if err != nil {
		return KeyPair{}, fmt.Errorf("generate RSA key: %w", err)
	}
	pub, err := ssh.NewPublicKey(&key.PublicKey)
	if err != nil {
		return KeyPair{}, fmt.Errorf("encode RSA public key: %w", err)
	}
	return KeyPair{
		PrivateKey: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		PublicKey:  ssh.MarshalAuthorizedKey(pub),
	}, nil
}

// sshPlugin lets the pods of a Job log in to each other: a Secret <job>-ssh with a key pair,
// authorized_keys (its public key) and an ssh config naming every host and the port, mounted in
// every container at the key path: with mode 0600 at /root/.ssh, 0644 elsewhere (so that a
// user other than root can read the files, which are owned by root).
//
// Flags: --ssh-key-file-path (default /root/.ssh), --ssh-port (22; a number outside 1–65535
// falls back to 22, as in Volcano), --ssh-private-key and --ssh-public-key (a key pair of the
// user's: the private key decides, as in Volcano; a public key alone is ignored and a pair is
// made). --no-root, which older Volcano releases took, is unknown to Volcano's current release
// and to ringfire alike: it and what follows it are ignored.
type sshPlugin struct {
	ignoredArgs
	env        Env
	path       string
	port       int
	privateKey string
	publicKey  string
}

func newSSH(args []string, env Env) (Plugin, error) {
	p := &sshPlugin{env: env}
	p.ignored = parseArgs(args, func(fs *flag.FlagSet) {
		fs.StringVar(&p.path, "ssh-key-file-path", DefaultSSHPath, "directory the keys are mounted at")
		fs.IntVar(&p.port, "ssh-port", DefaultSSHPort, "port of the hosts in the ssh config")
		fs.StringVar(&p.privateKey, "ssh-private-key", "", "the user's private key")
		fs.StringVar(&p.publicKey, "ssh-public-key", "", "the user's public key")
	})
	if checkPort("ssh-port", p.port) != nil {
		p.ignored = errors.Join(p.ignored, fmt.Errorf("--ssh-port=%d is not a port number: 22 is used", p.port))
		p.port = DefaultSSHPort
	}
	if p.privateKey == "" && p.publicKey != "" {
		p.ignored = errors.Join(p.ignored, errors.New("--ssh-public-key without --ssh-private-key is ignored: a new key pair is made"))
	}
	if p.path == "" {
		// A volume mount needs a path: every pod would be refused.
		return p, errors.New("--ssh-key-file-path is empty")
	}
	return p, nil
}

func (p *sshPlugin) Name() string { return "ssh" }

// sshSecretName is the name of the Job's key Secret: <job>-ssh.
func sshSecretName(job *batch.Job) string { return job.Name + "-ssh" }

func (p *sshPlugin) OnPodCreate(pod *corev1.Pod, job *batch.Job) error {
	name := sshSecretName(job)
	mode := int32(0o600)
	if p.path != DefaultSSHPath {
		mode = 0o644
	}
	var items []corev1.KeyToPath
	for _, file := range []string{sshPrivateKeyFile, sshPublicKeyFile, sshAuthorizedKeys, sshConfigFile} {
		items = append(items, corev1.KeyToPath{Key: file, Path: sshSecretDir + "/" + file})
	}
	addMount(pod,
		corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: name, Items: items, DefaultMode: &mode},
		}},
		corev1.VolumeMount{Name: name, MountPath: p.path, SubPath: sshSecretDir})
	return nil
}

// OnJobAdd asks for the key Secret. It is created when absent only: pods already running keep the
// key they were started with.
func (p *sshPlugin) OnJobAdd(job *batch.Job) (Changes, error) {
	keys := KeyPair{PrivateKey: []byte(p.privateKey), PublicKey: []byte(p.publicKey)}
	if p.privateKey == "" {
		generate := p.env.NewSSHKey
		if generate == nil {
			generate = RSAKeyPair
		}
		var err error
		if keys, err = generate(); err != nil {
			return Changes{}, err
		}
	}
	secret := &corev1.Secret{
		TypeMeta:   typeMeta("v1", "Secret"),
		ObjectMeta: build.OwnedMeta(job, sshSecretName(job), p.env.Slot),
		Data: map[string][]byte{
			sshPrivateKeyFile: keys.PrivateKey,
			sshPublicKeyFile:  keys.PublicKey,
			sshAuthorizedKeys: keys.PublicKey,
			sshConfigFile:     []byte(SSHConfig(job, p.port)),
		},
	}
	return Changes{Create: []Object{secret}}, nil
}

// OnJobUpdate changes nothing: a Secret mounted through a subPath is not refreshed in running
// containers, so Volcano leaves it as created, and so does ringfire.
func (p *sshPlugin) OnJobUpdate(*batch.Job) (Changes, error) { return Changes{}, nil }

func (p *sshPlugin) OnJobDelete(job *batch.Job) (Changes, error) {
	return Changes{Delete: []Object{
		&corev1.Secret{TypeMeta: typeMeta("v1", "Secret"), ObjectMeta: named(job, sshSecretName(job))},
	}}, nil
}

// SSHConfig is the ssh client config the plugin ships: no host key checks, and a Host entry per
// pod mapping its hostname to its DNS name in the Job's Service and to port.
func SSHConfig(job *batch.Job, port int) string {
	var b strings.Builder
	b.WriteString("StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n")
	for i := range job.Spec.Tasks {
		for _, h := range taskHosts(job, &job.Spec.Tasks[i]) {
			fmt.Fprintf(&b, "Host %s\n  HostName %s\n  Port %d\n", h.name, h.fqdn(), port)
		}
	}
	return b.String()
}
