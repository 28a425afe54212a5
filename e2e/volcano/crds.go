package volcano

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/ringfire/ringfire/deploy/crds"
)

// Release is the Helm release InstallCRDsAsHelm makes Volcano's CRDs look
// installed by: its name and namespace, as Volcano's install guide names them.
const (
	ReleaseName      = "volcano"
	ReleaseNamespace = "volcano-system"
	// HelmFieldManager is the field manager Helm 3 writes objects as.
	HelmFieldManager = "helm"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDsAsHelm creates every CRD of dir (see CRDs) as a Helm release of
// Volcano leaves them: created by the field manager "helm", labelled
// app.kubernetes.io/managed-by=Helm and annotated with the release's name
// and namespace (Volcano's chart renders its CRDs as templates, so they
// belong to the release). It waits until the API server serves each, and
// returns their names.
func InstallCRDsAsHelm(ctx context.Context, cfg *rest.Config, dir string) ([]string, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var names []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var obj map[string]any
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		crd := &unstructured.Unstructured{Object: obj}
		if crd.GetKind() != "CustomResourceDefinition" {
			continue
		}
		labels := crd.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["app.kubernetes.io/managed-by"] = "Helm"
		crd.SetLabels(labels)
		ann := crd.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann["meta.helm.sh/release-name"] = ReleaseName
		ann["meta.helm.sh/release-namespace"] = ReleaseNamespace
		crd.SetAnnotations(ann)
		if _, err := client.Resource(crdResource).Create(ctx, crd, metav1.CreateOptions{FieldManager: HelmFieldManager}); err != nil {
			return nil, fmt.Errorf("create CRD %s: %w", crd.GetName(), err)
		}
		names = append(names, crd.GetName())
	}
	for _, name := range names {
		if err := crds.WaitEstablished(ctx, client, name); err != nil {
			return nil, err
		}
	}
	return names, nil
}
