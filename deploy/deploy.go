// Package deploy holds the manifests that run ringfire in a cluster, as a kustomize base
// (kustomization.yaml: `kubectl apply -k deploy/`) of two parts: ringfire/ (namespace,
// least-privilege RBAC, headless Service, StatefulSet, PodDisruptionBudget, the ClusterRole
// ringfire-metrics-reader, a NetworkPolicy) and etcd/ (the ring's three-member etcd with TLS,
// a NetworkPolicy). The CRDs and admission policies are a kustomization of
// their own in crds/ (package crds installs them for the tests), the ServiceMonitor, alerts and
// Grafana dashboard are in monitoring/ (package monitoring), the overlays for common changes in
// overlays/ and the pieces they share in components/; docs/operations.md tells how to use them.
//
// The package applies the manifests too, for the tests and for `ringfire dev`: every end-to-end
// suite runs its replicas as the ServiceAccount of ringfire/10-rbac.yaml (ServiceAccountConfig),
// so a permission the code needs and the ClusterRole lacks fails the tests.
package deploy

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Namespace is the namespace of ringfire and its etcd; ServiceAccount is the replicas' account.
const (
	Namespace      = "ringfire-system"
	ServiceAccount = "ringfire"
	FieldManager   = "ringfire"
)

// SchedulerDir holds the ClusterRole of what only the gang scheduler needs, with its binding,
// and the kustomize component that adds both and the scheduler to the replicas.
const SchedulerDir = "components/gang-scheduler"

//go:embed ringfire/*.yaml etcd/*.yaml components/gang-scheduler/*.yaml
var manifests embed.FS

// Objects decodes the manifests of dir ("ringfire", "etcd" or SchedulerDir), in file order, as they are
// written: without what an overlay would change, and without the directory's
// kustomization.yaml, which is kustomize's index of them and no object.
func Objects(dir string) ([]*unstructured.Unstructured, error) {
	entries, err := fs.ReadDir(manifests, dir)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, e := range entries {
		if e.Name() == "kustomization.yaml" {
			continue
		}
		name := path.Join(dir, e.Name())
		data, err := manifests.ReadFile(name)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			err := dec.Decode(&obj.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if len(obj.Object) == 0 { // an empty document between two ---
				continue
			}
			out = append(out, obj)
		}
	}
	return out, nil
}

// Apply applies objs by server-side apply, in order; with dryRun the API server validates
// and admits them but stores nothing.
func Apply(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured, dryRun bool) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version)
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		ri := dynamic.ResourceInterface(client.Resource(m.Resource))
		if obj.GetNamespace() != "" {
			ri = client.Resource(m.Resource).Namespace(obj.GetNamespace())
		}
		if _, err := ri.Apply(ctx, obj.GetName(), obj, opts); err != nil {
			return fmt.Errorf("apply %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

// rbacKinds are the objects of ringfire/ that InstallRBAC applies.
var rbacKinds = []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"}

// InstallRBAC applies the namespace, the ServiceAccount, the ClusterRole and its binding of
// ringfire/, and the gang scheduler's ClusterRole and binding (SchedulerDir), and nothing
// else: what a replica outside the cluster (a test, `ringfire dev`) needs to run every
// controller, the scheduler among them, with the permissions a deployed one has.
func InstallRBAC(ctx context.Context, admin *rest.Config) error {
	objs, err := Objects("ringfire")
	if err != nil {
		return err
	}
	objs = slices.DeleteFunc(objs, func(o *unstructured.Unstructured) bool { return !slices.Contains(rbacKinds, o.GetKind()) })
	scheduler, err := Objects(SchedulerDir)
	if err != nil {
		return err
	}
	return Apply(ctx, admin, append(objs, scheduler...), false)
}

// ServiceAccountConfig returns a copy of admin that authenticates as ringfire's
// ServiceAccount instead, with a token of the TokenRequest API valid for seconds.
func ServiceAccountConfig(ctx context.Context, admin *rest.Config, seconds int64) (*rest.Config, error) {
	kube, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return nil, err
	}
	tr, err := kube.CoreV1().ServiceAccounts(Namespace).CreateToken(ctx, ServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for serviceaccount %s/%s: %w", Namespace, ServiceAccount, err)
	}
	cfg := rest.AnonymousClientConfig(admin) // keeps the server and its CA, drops the credentials
	cfg.BearerToken = tr.Status.Token
	return cfg, nil
}

// Kubeconfig is cfg (a token and a CA, as ServiceAccountConfig returns) as a kubeconfig file,
// for replicas run as processes.
func Kubeconfig(cfg *rest.Config) ([]byte, error) {
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, err
		}
		ca = b
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca}
	kc.AuthInfos[ServiceAccount] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts[ServiceAccount] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: ServiceAccount, Namespace: Namespace}
	kc.CurrentContext = ServiceAccount
	return clientcmd.Write(*kc)
}
