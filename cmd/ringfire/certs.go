package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/ringfire/ringfire/internal/certs"
)

// certsCommand makes the TLS material of the ring's etcd (deploy/etcd): by default it prints
// the two Secrets the manifests mount and a third that keeps the CA, for `ringfire certs |
// kubectl apply -f -`; with --dir it writes PEM files instead, for a ring run outside a
// cluster. With --renew it issues new server and client certificates under the CA of an
// existing ring (--ca, a Secret as kubectl prints it, or the files of --dir) and prints or
// writes only those: the members and replicas read them on their next TLS handshake.
func certsCommand(args []string) error {
	return certsTo(os.Stdin, os.Stdout, args)
}

func certsTo(stdin io.Reader, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("certs", flag.ContinueOnError)
	var o certs.Options
	var dir, hosts, caSecret string
	var renew bool
	fs.StringVar(&o.Namespace, "namespace", "ringfire-system", "namespace of the etcd Service and of the Secrets (with --renew --ca, the CA Secret's unless given)")
	fs.StringVar(&o.Service, "service", "ringfire-etcd", "the etcd headless Service: the members' certificate covers *.<service>.<namespace>.svc")
	fs.DurationVar(&o.Validity, "validity", 365*24*time.Hour, "how long the server and client certificates are valid")
	fs.DurationVar(&o.CAValidity, "ca-validity", 10*365*24*time.Hour, "how long a new CA is valid (leaves are renewed under it)")
	fs.StringVar(&hosts, "hosts", "", "comma-separated extra names or IPs the etcd members serve under")
	fs.StringVar(&dir, "dir", "", "write ca.{crt,key}, server.{crt,key} and client.{crt,key} into this directory instead of printing Secrets (with --renew and no --ca: renew the set in it, in place)")
	fs.BoolVar(&renew, "renew", false, "keep the CA (from --ca or --dir) and issue new server and client certificates")
	fs.StringVar(&caSecret, "ca", "", "with --renew: the CA Secret "+etcdCASecret+" as `kubectl get secret -o yaml` (or json) prints it; - for stdin")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("certs: unexpected arguments %q", fs.Args())
	}
	if hosts != "" {
		o.ExtraHosts = strings.Split(hosts, ",")
	}
	if caSecret != "" && !renew {
		return fmt.Errorf("--ca goes with --renew (without it, certs makes a new CA)")
	}
	set, err := makeSet(stdin, &o, renew, caSecret, dir, flagGiven(fs, "namespace"))
	if err != nil {
		return err
	}
	if dir != "" {
		files, err := set.WriteFiles(dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %s; run replicas with --etcd-ca=%s --etcd-cert=%s --etcd-key=%s\n", dir, files.CA, files.ClientCert, files.ClientKey)
		return nil
	}
	return writeSecrets(stdout, o.Namespace, set, !renew)
}

// makeSet makes a new set, or with renew the leaves under the CA of caSecret or dir. Renewed
// from a CA Secret, the leaves' namespace is the Secret's unless --namespace was given.
func makeSet(stdin io.Reader, o *certs.Options, renew bool, caSecret, dir string, namespaceGiven bool) (*certs.Set, error) {
	if !renew {
		return certs.New(*o)
	}
	var ca *certs.Authority
	var namespace string
	var err error
	switch {
	case caSecret != "":
		ca, namespace, err = readCASecret(stdin, caSecret)
	case dir != "":
		ca, err = certs.ReadAuthorityDir(dir)
	default:
		return nil, fmt.Errorf("--renew needs the CA: --ca FILE (the Secret %s, - for stdin) or --dir DIR (its ca.crt and ca.key)", etcdCASecret)
	}
	if err != nil {
		return nil, err
	}
	if !namespaceGiven && namespace != "" {
		o.Namespace = namespace
	}
	return certs.Renew(ca, *o)
}

// readCASecret reads the CA Secret from path (- for stdin), YAML or JSON.
func readCASecret(stdin io.Reader, path string) (*certs.Authority, string, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read the CA Secret: %w", err)
	}
	var secret corev1.Secret
	if err := yaml.Unmarshal(data, &secret); err != nil {
		return nil, "", fmt.Errorf("read the CA Secret %s: %w", path, err)
	}
	if secret.Kind != "Secret" {
		return nil, "", fmt.Errorf("%s is a %q, want the Secret %s", path, secret.Kind, etcdCASecret)
	}
	ca, err := certs.LoadAuthority(secret.Data[caCertKey], secret.Data[caKeyKey])
	if err != nil {
		return nil, "", fmt.Errorf("the CA Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return ca, secret.Namespace, nil
}

func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// The Secrets deploy/etcd and deploy/ringfire mount, and the CA's, which no pod mounts.
const (
	etcdServerSecret = "ringfire-etcd-server"
	etcdClientSecret = "ringfire-etcd-client"
	etcdCASecret     = "ringfire-etcd-ca"

	caCertKey = "ca.crt"
	caKeyKey  = "ca.key"
)

// writeSecrets prints the server and client Secrets, and with withCA the CA's.
func writeSecrets(w io.Writer, namespace string, set *certs.Set, withCA bool) error {
	labels := map[string]string{"app.kubernetes.io/part-of": "ringfire"}
	tlsSecret := func(name string, pair certs.Pair) corev1.Secret {
		return corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{caCertKey: set.CA, corev1.TLSCertKey: pair.Cert, corev1.TLSPrivateKeyKey: pair.Key},
		}
	}
	secrets := []corev1.Secret{tlsSecret(etcdServerSecret, set.Server), tlsSecret(etcdClientSecret, set.Client)}
	if withCA {
		secrets = append(secrets, corev1.Secret{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: etcdCASecret, Namespace: namespace, Labels: labels,
				Annotations: map[string]string{"ringfire.io/purpose": "signs renewed etcd certificates: ringfire certs --renew --ca -; mounted by no pod"}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{caCertKey: set.CA, caKeyKey: set.CAKey},
		})
	}
	for i, secret := range secrets {
		out, err := yaml.Marshal(secret)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(w, "---")
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	return nil
}
