// Command addcrds creates the CustomResourceDefinitions of a directory that
// the cluster does not have yet, and waits until each is served. The
// conformance runs use it for the CRDs Volcano's own programs watch beside
// those ringfire installs (JobFlow, JobTemplate, Numatopology, ...): without
// them vc-controller-manager and vc-scheduler wait for ever for their caches.
// CRDs the cluster already has are left as they are.
//
//	go run ./e2e/conformance/addcrds -kubeconfig K DIR
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ringfire/ringfire/deploy/crds"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: addcrds -kubeconfig K DIR")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, *kubeconfig, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "addcrds:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, dir string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	var created []string
	for _, path := range files {
		defs, err := decode(path)
		if err != nil {
			return err
		}
		for _, crd := range defs {
			_, err := client.Resource(crdResource).Create(ctx, crd, metav1.CreateOptions{})
			switch {
			case apierrors.IsAlreadyExists(err):
			case err != nil:
				return fmt.Errorf("create CRD %s from %s: %w", crd.GetName(), path, err)
			default:
				created = append(created, crd.GetName())
			}
		}
	}
	for _, name := range created {
		if err := crds.WaitEstablished(ctx, client, name); err != nil {
			return err
		}
	}
	fmt.Printf("added %d CRDs: %s\n", len(created), strings.Join(created, " "))
	return nil
}

// decode returns the CRDs among the YAML documents of path.
func decode(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj unstructured.Unstructured
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if obj.GetKind() == "CustomResourceDefinition" {
			out = append(out, &obj)
		}
	}
}
