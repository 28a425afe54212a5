package plugins

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// Object is a Kubernetes object a plugin asks the controller to write: a *corev1.Service,
// *corev1.ConfigMap, *corev1.Secret or *networkingv1.NetworkPolicy, with its TypeMeta set.
type Object interface {
	metav1.Object
	runtime.Object
}

// Changes are the writes a plugin asks for. Every object is owned by the Job (controller
// reference) and carries the Job's slot label.
type Changes struct {
	// Create holds objects to create when absent; an existing one is left as it is.
	Create []Object
	// Apply holds objects to create when absent, or else to update to this content: only
	// ConfigMaps (the controller updates, and may update, nothing else).
	Apply []Object
	// Delete holds objects to delete when present; only kind, namespace and name are set.
	Delete []Object
}

// add appends the writes of o to c.
func (c *Changes) add(o Changes) {
	c.Create = append(c.Create, o.Create...)
	c.Apply = append(c.Apply, o.Apply...)
	c.Delete = append(c.Delete, o.Delete...)
}

// Plugin is one job plugin with its arguments parsed. Every hook is idempotent.
type Plugin interface {
	// Name is the plugin's key in job.spec.plugins.
	Name() string
	// OnPodCreate changes a pod of job before it is created.
	OnPodCreate(pod *corev1.Pod, job *batch.Job) error
	// OnJobAdd returns the objects job needs while it is initiated.
	OnJobAdd(job *batch.Job) (Changes, error)
	// OnJobUpdate returns the objects to bring up to date on later syncs (a scaled task).
	OnJobUpdate(job *batch.Job) (Changes, error)
	// OnJobDelete returns the objects to delete when job's pods are killed.
	OnJobDelete(job *batch.Job) (Changes, error)
	// Ignored is what the parse of the plugin's arguments left out, as Volcano leaves it out:
	// nil when every argument was taken.
	Ignored() error
}

// Env is what plugins need besides the Job.
type Env struct {
	// Slot is the ring slot of the Job, for the label of the objects the plugins return.
	Slot int
	// NewSSHKey makes the ssh plugin's key pair; nil means RSAKeyPair.
	NewSSHKey KeyGenerator
}
