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
// the two Secrets the manifests mount, for `ringfire certs | kubectl apply -f -`; with --dir
// it writes PEM files instead, for a ring run outside a cluster.
func certsCommand(args []string) error {
	fs := flag.NewFlagSet("certs", flag.ContinueOnError)
	var o certs.Options
	var dir, hosts string
	fs.StringVar(&o.Namespace, "namespace", "ringfire-system", "namespace of the etcd Service and of the Secrets")
	fs.StringVar(&o.Service, "service", "ringfire-etcd", "the etcd headless Service: the members' certificate covers *.<service>.<namespace>.svc")
	fs.DurationVar(&o.Validity, "validity", 365*24*time.Hour, "how long the certificates are valid")
	fs.StringVar(&hosts, "hosts", "", "comma-separated extra names or IPs the etcd members serve under")
	fs.StringVar(&dir, "dir", "", "write ca.crt, server.{crt,key} and client.{crt,key} into this directory instead of printing Secrets")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if hosts != "" {
		o.ExtraHosts = strings.Split(hosts, ",")
	}
	set, err := certs.New(o)
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
	return writeSecrets(os.Stdout, o.Namespace, set)
}

// The Secrets deploy/etcd and deploy/ringfire mount.
const (
	etcdServerSecret = "ringfire-etcd-server"
	etcdClientSecret = "ringfire-etcd-client"
)

func writeSecrets(w io.Writer, namespace string, set *certs.Set) error {
	for i, s := range []struct {
		name string
		pair certs.Pair
	}{{etcdServerSecret, set.Server}, {etcdClientSecret, set.Client}} {
		secret := corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/part-of": "ringfire"}},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{"ca.crt": set.CA, corev1.TLSCertKey: s.pair.Cert, corev1.TLSPrivateKeyKey: s.pair.Key},
		}
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
