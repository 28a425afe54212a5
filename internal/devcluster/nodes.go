package devcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeName is the name of the i-th fake node.
func NodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

// createNodes registers the fake nodes the way a kubelet would, capacity in
// status; kwok then takes them over through the annotation.
func (c *Cluster) createNodes(ctx context.Context) error {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(c.opts.NodeCPU),
		corev1.ResourceMemory: resource.MustParse(c.opts.NodeMemory),
		corev1.ResourcePods:   resource.MustParse(c.opts.NodePods),
	}
	for i := range c.opts.Nodes {
		name := NodeName(i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name: name,
				Labels: map[string]string{
					corev1.LabelHostname:   name,
					corev1.LabelOSStable:   "linux",
					corev1.LabelArchStable: "amd64",
					"type":                 "kwok",
				},
				Annotations: map[string]string{
					KWOKNodeAnnotation:             "fake",
					"node.alpha.kubernetes.io/ttl": "0",
				},
			},
			Status: corev1.NodeStatus{
				Capacity:    resources.DeepCopy(),
				Allocatable: resources.DeepCopy(),
			},
		}
		_, err := c.clientset.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", name, err)
		}
		c.nodeNames = append(c.nodeNames, name)
	}
	return nil
}
