package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/ringfire/ringfire/deploy"
	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/deploy/examples"
	"github.com/ringfire/ringfire/internal/devcluster"
	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/internal/procs"
	"github.com/ringfire/ringfire/internal/replica"
	"github.com/ringfire/ringfire/shard"
)

type devFlags struct {
	dir           string
	replicas      int
	nodes         int
	examples      bool
	controllers   string
	kubeScheduler bool
	realNode      bool
	firstPort     int
}

func devCommand(args []string) error {
	if len(args) == 0 || (args[0] != "up" && args[0] != "down") {
		return errors.New("usage: ringfire dev up|down [flags]")
	}
	fs := flag.NewFlagSet("dev "+args[0], flag.ContinueOnError)
	var f devFlags
	fs.StringVar(&f.dir, "dir", ".ringfire/dev", "state directory of the local cluster: certificates, data, one log per process")
	fs.IntVar(&f.replicas, "replicas", 3, "ringfire replicas to start")
	fs.IntVar(&f.nodes, "nodes", 4, "KWOK fake nodes")
	fs.BoolVar(&f.examples, "examples", true, "submit the sample jobs of deploy/examples")
	fs.StringVar(&f.controllers, "controllers", strings.Join(replica.KnownControllers(), ","),
		"the replicas' --controllers (every controller by default); leave out scheduler to run them beside another scheduler (vc-scheduler)")
	fs.BoolVar(&f.kubeScheduler, "kube-scheduler", true, "run kube-scheduler too, for pods of the default scheduler")
	fs.BoolVar(&f.realNode, "real-node", false, "also run a real node on this machine: kubelet, containerd, kube-proxy and CoreDNS (root; `make node-tools` builds them; docs/node.md); pods that tolerate the taint ringfire.io/real-node run there")
	fs.IntVar(&f.firstPort, "port", 18080, "metrics and status page port of the first replica, the next ones counting up from it; each replica's health probes are on its port + 100")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if args[0] == "down" {
		return devDown(f)
	}
	// The replicas would refuse a bad list only once the control plane is up.
	if err := replica.ValidateControllers(replica.ParseControllers(f.controllers)); err != nil {
		return fmt.Errorf("-controllers %q: %w", f.controllers, err)
	}
	if f.replicas > healthPortOffset {
		return fmt.Errorf("-replicas %d: at most %d, so that metrics ports (-port and up) and health ports (-port+%d and up) do not overlap", f.replicas, healthPortOffset, healthPortOffset)
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "dev", Level: hclog.Info, Output: os.Stderr})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return devUp(ctx, f, log)
}

func (f devFlags) pidFile() string { return filepath.Join(f.dir, "dev.pid") }

// devUp starts a local control plane, an etcd for the ring and the
// replicas, submits the samples, and shows progress until ctx is done.
func devUp(ctx context.Context, f devFlags, log hclog.Logger) error {
	if pid, alive := livePID(f.pidFile()); alive {
		return fmt.Errorf("a dev cluster is already running (pid %d); stop it with `ringfire dev down --dir %s`", pid, f.dir)
	}
	if err := os.RemoveAll(f.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(f.pidFile(), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	defer os.Remove(f.pidFile())

	tools, err := devcluster.FindTools(ctx, log, os.Stderr)
	if err != nil {
		return err
	}
	log.Info("using the pinned tools", "dir", tools)
	log.Info("starting the local control plane (etcd, kube-apiserver, kube-controller-manager, kwok)", "nodes", f.nodes)
	c, err := devcluster.Start(ctx, devcluster.Options{
		Nodes: f.nodes, Dir: filepath.Join(f.dir, "cluster"), ToolsBin: tools, Logger: log.Named("cluster"),
		KubeScheduler: f.kubeScheduler, RealNode: f.realNode,
	})
	if err != nil {
		return err
	}
	defer c.Stop()
	if err := crds.Install(ctx, c.RESTConfig()); err != nil {
		return err
	}
	log.Info("installed the Volcano CRDs and the default Queue", "kubeconfig", c.Kubeconfig())
	// The replicas run as a deployed one does: as ringfire's ServiceAccount, with the
	// ClusterRole of deploy/ringfire and nothing more.
	replicaKubeconfig, err := serviceAccountKubeconfig(ctx, c, f.dir)
	if err != nil {
		return err
	}

	ringEtcd, err := localetcd.Start(localetcd.Options{Dir: filepath.Join(f.dir, "ring-etcd"), Logger: log.Named("ring-etcd")})
	if err != nil {
		return err
	}
	defer ringEtcd.Stop()

	replicas, err := startReplicas(f, replicaKubeconfig, ringEtcd.Endpoint(), log)
	defer func() {
		if err := procs.StopAll(replicas, 15*time.Second); err != nil {
			log.Warn("stopping the replicas", "error", err)
		}
	}()
	if err != nil {
		return err
	}

	if f.examples {
		if err := applyExamples(ctx, c.RESTConfig()); err != nil {
			return err
		}
		log.Info("submitted the sample jobs of deploy/examples")
	}
	fmt.Printf("\nringfire dev cluster is up (%d replicas, controllers %s). Try:\n  export KUBECONFIG=%s\n  kubectl get vcjob,pods -A\n  %s ring status --etcd-endpoints %s\n", f.replicas, f.controllers, c.Kubeconfig(), selfCommand(), ringEtcd.Endpoint())
	for _, r := range replicas {
		fmt.Printf("  replica %s: status page http://%s/ (metrics at /metrics), probes http://%s/readyz\n", r.ID, r.Addrs.Metrics, r.Addrs.Health)
	}
	// The replicas serve their status pages as plain HTTP without a token, on the loopback
	// only, so that a browser opens them; a deployed replica requires both (--metrics-secure).
	fmt.Printf("Metrics and status pages are plain HTTP without a token here, on 127.0.0.1 only; deployed replicas serve HTTPS to a token with the ClusterRole ringfire-metrics-reader (docs/metrics.md).\n")
	fmt.Printf("Logs: %s. Ctrl-C stops everything.\n\n", f.dir)
	return showProgress(ctx, c.RESTConfig(), ringEtcd.Endpoint())
}

// healthPortOffset puts replica i's health probes at -port + 100 + i, next
// to its metrics at -port + i.
const healthPortOffset = 100

// replicaAddrs are the addresses replica i serves on.
func (f devFlags) replicaAddrs(i int) procs.Addrs {
	return procs.Addrs{
		Metrics: fmt.Sprintf("127.0.0.1:%d", f.firstPort+i),
		Health:  fmt.Sprintf("127.0.0.1:%d", f.firstPort+healthPortOffset+i),
	}
}

// selfCommand is how the user runs this binary again: `go run ./cmd/ringfire`
// under `go run` (whose executable lives in a temporary build directory),
// else the executable's path.
func selfCommand() string {
	self, err := os.Executable()
	if err != nil {
		return "ringfire"
	}
	if strings.Contains(self, string(filepath.Separator)+"go-build") {
		return "go run ./cmd/ringfire"
	}
	return self
}

// startReplicas runs the replicas as processes of this same binary, each
// logging to a file of its own in the state directory and dying with this
// process. On an error it returns the replicas it did start, to be stopped.
func startReplicas(f devFlags, kubeconfig, etcd string, log hclog.Logger) ([]*procs.Replica, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := procs.Args{
		Bin: self, Etcd: etcd, Kubeconfig: kubeconfig, LogDir: f.dir,
		Controllers: f.controllers,
	}
	var out []*procs.Replica
	for i := range f.replicas {
		r, err := procs.Start(args, fmt.Sprintf("ringfire-%d", i), f.replicaAddrs(i))
		if err != nil {
			return out, err
		}
		out = append(out, r)
		log.Info("started replica", "id", r.ID, "pid", r.PID(), "log", r.LogPath)
	}
	return out, nil
}

// applyExamples applies every sample manifest by server-side apply.
func applyExamples(ctx context.Context, cfg *rest.Config) error {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	return fs.WalkDir(examples.Files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := examples.Files.ReadFile(path)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var obj unstructured.Unstructured
			if err := dec.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return fmt.Errorf("%s: %w", path, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			gvk := obj.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", path, gvk, err)
			}
			var ri dynamic.ResourceInterface = client.Resource(m.Resource)
			if ns := obj.GetNamespace(); ns != "" {
				ri = client.Resource(m.Resource).Namespace(ns)
			}
			if _, err := ri.Apply(ctx, obj.GetName(), &obj, metav1.ApplyOptions{FieldManager: "ringfire-dev", Force: true}); err != nil {
				return fmt.Errorf("apply %s %s from %s: %w", gvk.Kind, obj.GetName(), path, err)
			}
		}
	})
}

var vcjobs = schema.GroupVersionResource{Group: "batch.volcano.sh", Version: "v1alpha1", Resource: "jobs"}

// showProgress prints, every two seconds, the jobs by phase and the slots
// held per replica, until ctx is done.
func showProgress(ctx context.Context, cfg *rest.Config, ringEndpoint string) error {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var ef etcdFlags
	ef.prefix = "/ringfire"
	etcd, err := ef.client([]string{ringEndpoint})
	if err != nil {
		return err
	}
	defer etcd.Close()
	finished := false
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		line, done := progressLine(ctx, client, etcd, ef.prefix)
		fmt.Println(time.Now().Format("15:04:05"), line)
		if done && !finished {
			finished = true
			fmt.Println("all sample jobs have finished; still serving until Ctrl-C")
		}
		select {
		case <-ctx.Done():
			fmt.Println("stopping the dev cluster")
			return nil
		case <-tick.C:
		}
	}
}

func progressLine(ctx context.Context, client dynamic.Interface, etcd *clientv3.Client, prefix string) (string, bool) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var b strings.Builder
	jobs, err := client.Resource(vcjobs).List(rctx, metav1.ListOptions{})
	allDone := false
	if err != nil {
		fmt.Fprintf(&b, "jobs: %v", err)
	} else {
		phases := map[string]int{}
		allDone = len(jobs.Items) > 0
		for _, j := range jobs.Items {
			phase, _, _ := unstructured.NestedString(j.Object, "status", "state", "phase")
			if phase == "" {
				phase = "Pending"
			}
			phases[phase]++
			switch phase {
			case "Completed", "Failed", "Terminated", "Aborted":
			default:
				allDone = false
			}
		}
		fmt.Fprintf(&b, "jobs %d:%s", len(jobs.Items), counts(phases))
	}
	snap, err := shard.ReadSnapshot(rctx, etcd, prefix)
	if err != nil {
		fmt.Fprintf(&b, " | ring: %v", err)
		return b.String(), allDone
	}
	held := map[string]int{}
	for _, s := range snap.Summary() {
		held[s.ID] = s.Held
	}
	fmt.Fprintf(&b, " | slots held:%s, in motion %d", counts(held), len(snap.InMotion()))
	return b.String(), allDone
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, m[k])
	}
	return b.String()
}

// devDown stops a dev cluster left running by `ringfire dev up`: its
// processes die with it.
func devDown(f devFlags) error {
	pid, alive := livePID(f.pidFile())
	if !alive {
		fmt.Println("no dev cluster running in", f.dir)
		return os.RemoveAll(f.dir)
	}
	p, _ := os.FindProcess(pid)
	p.Signal(syscall.SIGTERM)
	for range 120 {
		if _, alive := livePID(f.pidFile()); !alive {
			fmt.Println("stopped the dev cluster")
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	p.Signal(syscall.SIGKILL)
	fmt.Println("the dev cluster did not stop within 30s; killed it")
	return os.RemoveAll(f.dir)
}

// livePID reads a pid file and reports whether that process still runs.
func livePID(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, syscall.Kill(pid, 0) == nil
}

// serviceAccountKubeconfig installs ringfire's RBAC (deploy/ringfire) and writes a kubeconfig
// of its ServiceAccount (a token valid a week) into dir.
func serviceAccountKubeconfig(ctx context.Context, c *devcluster.Cluster, dir string) (string, error) {
	if err := deploy.InstallRBAC(ctx, c.RESTConfig()); err != nil {
		return "", err
	}
	cfg, err := deploy.ServiceAccountConfig(ctx, c.RESTConfig(), 7*24*3600)
	if err != nil {
		return "", err
	}
	data, err := deploy.Kubeconfig(cfg)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "ringfire-serviceaccount.kubeconfig")
	return path, os.WriteFile(path, data, 0o600)
}
