package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/ringfire/ringfire/internal/replica"
)

// kubeFlags reach the Kubernetes API server.
type kubeFlags struct {
	kubeconfig string
	qps        float64
	burst      int
	// contentType is the wire format of the clients of built-in kinds
	// (replica.Config.KubeContentType).
	contentType string
}

func (f *kubeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to manage; empty: $KUBECONFIG, else the in-cluster config, else no cluster (the ring only)")
	fs.Float64Var(&f.qps, "kube-api-qps", 200, "queries per second to the API server (the replica that runs the gang scheduler binds every pod and records its Event: size for twice the pods per second the cluster starts)")
	fs.IntVar(&f.burst, "kube-api-burst", 400, "burst of queries to the API server")
	fs.StringVar(&f.contentType, "kube-api-content-type", replica.DefaultKubeContentType, "wire format of the requests for Kubernetes' built-in kinds (pods, Events, batch/v1 Jobs, PVCs, Services, ConfigMaps, leases, PriorityClasses...): "+
		replica.ContentTypeProtobuf+" (answers accepted in protobuf or JSON) or "+replica.ContentTypeJSON+"; the Volcano kinds are CRDs, which the API server serves only in JSON, whatever this says")
}

// checkContentType refuses a --kube-api-content-type that is neither format.
// An empty flag is a mistake, not the default.
func (f *kubeFlags) checkContentType() error {
	if f.contentType == "" {
		return fmt.Errorf("--kube-api-content-type is empty: use %s or %s", replica.ContentTypeProtobuf, replica.ContentTypeJSON)
	}
	if err := replica.CheckKubeContentType(f.contentType); err != nil {
		return fmt.Errorf("--kube-api-content-type: %w", err)
	}
	return nil
}

// restConfig returns the API server's config, or nil when there is none to
// use (no kubeconfig and not in a cluster).
func (f *kubeFlags) restConfig(log hclog.Logger) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		if f.kubeconfig == "" && clientcmd.IsEmptyConfig(err) {
			if cfg, err = rest.InClusterConfig(); err == nil {
				return f.tune(cfg), nil
			}
			log.Warn("no kubeconfig and not in a cluster: running the ring only, no controllers")
			return nil, nil
		}
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return f.tune(cfg), nil
}

func (f *kubeFlags) tune(cfg *rest.Config) *rest.Config {
	cfg.QPS, cfg.Burst = float32(f.qps), f.burst
	cfg.UserAgent = "ringfire"
	return cfg
}

// routeKlog sends client-go's klog output to the replica's logger, each line
// at its own level.
func routeKlog(log hclog.Logger) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	// klog writes each line to every severity at and below its own: only the
	// info stream carries every line exactly once.
	_ = fs.Set("one_output", "true")
	// Errors would also go to stderr, raw, beside the logger's line.
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(klogWriter{log.Named("client-go")})
}

// klogWriter logs klog's lines ("E1125 00:00:08.289607    7193 file.go:49] msg")
// at the level their first letter names (I, W, E, F), with the source
// file as "at"; a line it cannot parse goes out whole at info.
type klogWriter struct{ log hclog.Logger }

func (w klogWriter) Write(p []byte) (int, error) {
	for line := range strings.Lines(string(p)) {
		line = strings.TrimRight(line, "\n")
		if line == "" {
			continue
		}
		level, at, msg := parseKlogLine(line)
		if at != "" {
			w.log.Log(level, msg, "at", at)
		} else {
			w.log.Log(level, msg)
		}
	}
	return len(p), nil
}

// parseKlogLine splits a klog line into its level, source and message.
func parseKlogLine(line string) (hclog.Level, string, string) {
	head, msg, ok := strings.Cut(line, "] ")
	if !ok || len(head) < 2 {
		return hclog.Info, "", line
	}
	level := hclog.Info
	switch head[0] {
	case 'I':
	case 'W':
		level = hclog.Warn
	case 'E', 'F':
		level = hclog.Error
	default:
		return hclog.Info, "", line
	}
	at := head
	if i := strings.LastIndexByte(head, ' '); i >= 0 {
		at = head[i+1:]
	}
	return level, at, msg
}
