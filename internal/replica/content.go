package replica

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/shard"
)

// The wire formats of the clientset of Kubernetes' built-in kinds
// (Config.KubeContentType, `ringfire run --kube-api-content-type`).
const (
	// ContentTypeProtobuf: application/vnd.kubernetes.protobuf, with JSON
	// accepted back (what kube-controller-manager speaks). Decoding a pod
	// from protobuf costs a fraction of decoding it from JSON, and the lists
	// and watch events are smaller.
	ContentTypeProtobuf = "protobuf"
	// ContentTypeJSON: application/json, as every client spoke before.
	ContentTypeJSON = "json"
	// DefaultKubeContentType is the format when none is named.
	DefaultKubeContentType = ContentTypeProtobuf
)

// The Accept header and body type of the built-in kinds' clients in protobuf.
const (
	protobufAccept      = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	protobufContentType = runtime.ContentTypeProtobuf
)

// clients are the replica's API clients, all over one transport (the
// fence, the User-Agent, the rate limits of the config they were made from).
type clients struct {
	// kube speaks contentType: pods, Events, batch/v1 Jobs, PVCs, Services,
	// ConfigMaps, Secrets, NetworkPolicies, PriorityClasses, bindings...
	kube kubernetes.Interface
	// vc speaks JSON: the Volcano kinds are CRDs, which the API server
	// serves in JSON (and YAML, CBOR) but never in protobuf.
	vc vcclient.Interface
	// md (nil when not asked for) negotiates on its own: client-go's
	// metadata client asks for PartialObjectMetadata in protobuf, which the
	// API server serves for CRDs too, and sends its patches as JSON.
	md metadata.Interface
}

// BuiltinConfig returns base for a clientset of built-in kinds in the wire
// format contentType ("" for DefaultKubeContentType). base is left as it is:
// the Volcano clientset and the discovery probes keep it. `ringfire run` also
// gives it to the metrics port's token and access reviews.
func BuiltinConfig(base *rest.Config, contentType string) (*rest.Config, error) {
	if err := CheckKubeContentType(contentType); err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(base)
	if contentType == ContentTypeJSON {
		cfg.AcceptContentTypes = runtime.ContentTypeJSON
		cfg.ContentType = runtime.ContentTypeJSON
	} else {
		cfg.AcceptContentTypes = protobufAccept
		cfg.ContentType = protobufContentType
	}
	return cfg, nil
}

// CheckKubeContentType refuses a wire format that is neither
// ContentTypeProtobuf nor ContentTypeJSON ("" is the default).
func CheckKubeContentType(contentType string) error {
	switch contentType {
	case "", ContentTypeProtobuf, ContentTypeJSON:
		return nil
	}
	return fmt.Errorf("API content type %q: use %s or %s", contentType, ContentTypeProtobuf, ContentTypeJSON)
}

// crdConfig returns base for the clients of CRDs: JSON whatever base says.
func crdConfig(base *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.AcceptContentTypes = runtime.ContentTypeJSON
	cfg.ContentType = runtime.ContentTypeJSON
	return cfg
}

// newClients builds the replica's API clients over kube: the built-in kinds'
// in contentType, the Volcano kinds' in JSON, and with metadata the metadata
// client that adoption uses.
//
// With fair, each client's rate limit (kube's QPS and Burst, one bucket per client as
// client-go gives each clientset) is a shard.FairLimiter: its requests a second are shared
// between the namespaces whose reconciles ask, not served in the order they came.
func newClients(kube *rest.Config, contentType string, withMetadata, fair bool) (clients, error) {
	builtin, err := BuiltinConfig(kube, contentType)
	if err != nil {
		return clients{}, err
	}
	limited := func(cfg *rest.Config) *rest.Config {
		if fair && cfg.RateLimiter == nil && cfg.QPS > 0 {
			cfg = rest.CopyConfig(cfg)
			cfg.RateLimiter = shard.NewFairLimiter(cfg.QPS, cfg.Burst)
		}
		return cfg
	}
	var c clients
	if c.kube, err = kubernetes.NewForConfig(limited(builtin)); err != nil {
		return clients{}, fmt.Errorf("kubernetes client: %w", err)
	}
	if c.vc, err = vcclient.NewForConfig(limited(crdConfig(kube))); err != nil {
		return clients{}, fmt.Errorf("volcano client: %w", err)
	}
	if withMetadata {
		if c.md, err = metadata.NewForConfig(limited(kube)); err != nil {
			return clients{}, fmt.Errorf("metadata client: %w", err)
		}
	}
	return c, nil
}
