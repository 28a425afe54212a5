package podgroup

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
)

// ownerReadTimeout bounds the read of one owner.
const ownerReadTimeout = 10 * time.Second

// ownerAnnotations merges the annotations of the pod's owners that Volcano reads (ReplicaSet,
// DaemonSet, StatefulSet, batch/v1 Job), the first owner's value winning. An owner that cannot
// be read is logged and skipped, as in Volcano: the PodGroup is then built without it.
func (c *Controller) ownerAnnotations(ctx context.Context, pod *corev1.Pod) map[string]string {
	var merged map[string]string
	for _, ref := range pod.OwnerReferences {
		annotations, err := c.readOwner(ctx, pod.Namespace, ref)
		if err != nil {
			c.Log.Warn("cannot read the pod's owner; its annotations are not inherited",
				"pod", toolscache.MetaObjectToName(pod).String(), "owner", ref.Kind+"/"+ref.Name, "error", err)
			continue
		}
		for k, v := range annotations {
			if _, ok := merged[k]; !ok {
				if merged == nil {
					merged = map[string]string{}
				}
				merged[k] = v
			}
		}
	}
	return merged
}

// readOwner returns the annotations of the owner ref names, or nil for a kind Volcano does not
// read.
func (c *Controller) readOwner(ctx context.Context, namespace string, ref metav1.OwnerReference) (map[string]string, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || ref.Name == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ownerReadTimeout)
	defer cancel()
	get := metav1.GetOptions{}
	var obj metav1.Object
	switch gv.WithKind(ref.Kind).GroupKind() {
	case appsv1.SchemeGroupVersion.WithKind("ReplicaSet").GroupKind():
		obj, err = c.cfg.Kube.AppsV1().ReplicaSets(namespace).Get(ctx, ref.Name, get)
	case appsv1.SchemeGroupVersion.WithKind("DaemonSet").GroupKind():
		obj, err = c.cfg.Kube.AppsV1().DaemonSets(namespace).Get(ctx, ref.Name, get)
	case appsv1.SchemeGroupVersion.WithKind("StatefulSet").GroupKind():
		obj, err = c.cfg.Kube.AppsV1().StatefulSets(namespace).Get(ctx, ref.Name, get)
	case batchv1.SchemeGroupVersion.WithKind("Job").GroupKind():
		obj, err = c.cfg.Kube.BatchV1().Jobs(namespace).Get(ctx, ref.Name, get)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if ref.UID != "" && obj.GetUID() != ref.UID {
		// Another object of the name: the pod's owner was deleted and this one made since.
		// Its annotations are not the pod's owner's (Volcano reads by name and takes them).
		return nil, nil
	}
	return obj.GetAnnotations(), nil
}
