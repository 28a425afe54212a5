package devcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/hashicorp/go-hclog"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ringfire/ringfire/internal/freeport"
)

// Component names one process of the control plane.
type Component string

// The components, in the order Start starts them.
const (
	Etcd              Component = "etcd"
	APIServer         Component = "kube-apiserver"
	ControllerManager Component = "kube-controller-manager"
	KWOK              Component = "kwok"
	// Scheduler is kube-scheduler, started only with Options.KubeScheduler.
	Scheduler Component = "kube-scheduler"
)

// allComponents is every component a cluster may run, in start order.
var allComponents = []Component{Etcd, APIServer, ControllerManager, KWOK, Scheduler, Containerd, CoreDNS, KubeProxy, Kubelet}

// components are the ones this cluster runs, in start order.
func (c *Cluster) components() []Component {
	out := []Component{Etcd, APIServer, ControllerManager, KWOK}
	if c.opts.KubeScheduler {
		out = append(out, Scheduler)
	}
	if c.opts.RealNode {
		out = append(out, nodeComponents...)
	}
	return out
}

// Address ranges the cluster reports but never routes: services get virtual
// IPs from serviceCIDR, KWOK pods get IPs from podCIDR. No traffic goes there.
const (
	serviceCIDR = "10.96.0.0/16"
	serviceIP   = "10.96.0.1" // the first address, the `kubernetes` Service
	podCIDR     = "10.128.0.0/12"
)

// Cluster is a running local control plane. Start makes one; Stop ends it.
type Cluster struct {
	opts   Options
	log    hclog.Logger
	dir    string
	ownDir bool // Dir was made by Start, so Stop removes it

	etcdURL    string
	serverURL  string
	kubeconfig string
	adminToken string
	restConfig *rest.Config
	clientset  kubernetes.Interface
	nodeNames  []string
	// nodeLock is the machine's real-node lock while this cluster runs one.
	nodeLock *os.File

	mu       sync.Mutex
	argv     map[Component][]string // binary and arguments, kept for Restart
	procs    map[Component]*process
	stopped  bool
	stopOnce sync.Once
	stopErr  error
}

// Start brings up etcd, kube-apiserver, kube-controller-manager and kwok on
// loopback with free ports, creates opts.Nodes fake nodes, and returns once
// the API server is ready, the default service account exists and every node
// is Ready without the not-ready taint. On failure it stops what it started;
// the error carries the tail of the failing component's log.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	c := &Cluster{
		opts:  opts,
		log:   opts.Logger,
		dir:   opts.Dir,
		argv:  map[Component][]string{},
		procs: map[Component]*process{},
	}
	if err := c.start(ctx); err != nil {
		// Keep the state directory, logs included, for a look afterwards.
		c.ownDir = false
		_ = c.Stop()
		return nil, fmt.Errorf("start local control plane (state and logs in %s): %w", c.dir, err)
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	if c.opts.RealNode {
		if err := c.nodePreflight(); err != nil {
			return err
		}
		// Before prepareDir: a node left running in the directory must be
		// stopped and unmounted before its files go.
		if err := c.lockNode(); err != nil {
			return err
		}
	}
	if err := c.prepareDir(); err != nil {
		return err
	}
	for _, name := range c.components() {
		bin := filepath.Join(c.opts.ToolsBin, string(name))
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%s not built in %s (`make tools` in a checkout builds them; an installed `ringfire dev up` finds or builds them itself): %w", name, c.opts.ToolsBin, err)
		}
	}
	if c.opts.RealNode {
		if err := c.setUpNodeHost(ctx); err != nil {
			return err
		}
	}
	ports, err := freeport.PickN(8)
	if err != nil {
		return err
	}
	etcdPort, etcdPeerPort, serverPort := ports[0], ports[1], ports[2]
	c.etcdURL = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(etcdPort))
	c.serverURL = "https://" + net.JoinHostPort(c.serverHost(), strconv.Itoa(serverPort))

	files, err := c.writeCredentials()
	if err != nil {
		return err
	}
	c.argv[Etcd] = c.etcdArgs(etcdPeerPort)
	c.argv[APIServer] = c.apiServerArgs(serverPort, files)
	audit, err := c.writeAuditPolicy()
	if err != nil {
		return err
	}
	c.argv[APIServer] = append(append(c.argv[APIServer], audit...), c.opts.APIServerArgs...)
	c.argv[ControllerManager] = append(c.controllerManagerArgs(files), c.opts.ControllerManagerArgs...)
	c.argv[KWOK] = c.kwokArgs(files)
	c.argv[Scheduler] = c.schedulerArgs(files)
	if c.opts.RealNode {
		if err := c.writeNodeFiles(files, ports[3:]); err != nil {
			return err
		}
	}
	if err := os.WriteFile(files.stages, renderStages(c.opts.DefaultPodDuration, c.opts.KWOKPodParallelism), 0o644); err != nil {
		return err
	}

	c.log.Info("starting local control plane", "dir", c.dir, "server", c.serverURL, "etcd", c.etcdURL)
	if err := c.launch(Etcd); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "etcd healthy", []Component{Etcd}, c.etcdHealthy); err != nil {
		return err
	}
	if err := c.launch(APIServer); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "kube-apiserver ready", []Component{Etcd, APIServer}, c.apiServerReady); err != nil {
		return err
	}
	if err := c.installKwokDeletesPolicy(ctx); err != nil {
		return err
	}
	for _, name := range c.components()[2:] {
		if name == Containerd {
			break // the real node starts once the control plane is up
		}
		if err := c.launch(name); err != nil {
			return err
		}
	}
	if err := c.waitFor(ctx, "default service account", c.components(), c.defaultServiceAccountExists); err != nil {
		return err
	}
	if err := c.createNodes(ctx); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "nodes ready and untainted", c.components(), c.nodesReady); err != nil {
		return err
	}
	if c.opts.RealNode {
		if err := c.startNode(ctx); err != nil {
			return err
		}
	}
	c.log.Info("local control plane ready", "nodes", len(c.nodeNames), "kubeconfig", c.kubeconfig)
	return nil
}

func (c *Cluster) prepareDir() error {
	if c.dir == "" {
		dir, err := os.MkdirTemp("", "ringfire-cluster-")
		if err != nil {
			return fmt.Errorf("make state directory: %w", err)
		}
		c.dir, c.ownDir = dir, true
		return nil
	}
	abs, err := filepath.Abs(c.dir)
	if err != nil {
		return err
	}
	c.dir = abs
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	// A directory used before starts afresh: stop whatever still runs there
	// and drop the old data and credentials; logs are appended to.
	if err := StopDir(c.dir); err != nil {
		return fmt.Errorf("stop the cluster left in %s: %w", c.dir, err)
	}
	// The audit log records one run: the old one would mix in writes of
	// objects that no longer exist.
	for _, stale := range []string{"etcd-data", "pki", auditLogFile, "node"} {
		if err := os.RemoveAll(filepath.Join(c.dir, stale)); err != nil {
			return err
		}
	}
	return nil
}

// launch starts one component from its recorded command line.
func (c *Cluster) launch(name Component) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return fmt.Errorf("start %s: cluster stopped", name)
	}
	argv := c.argv[name]
	var env []string
	if name == APIServer {
		env = c.opts.APIServerEnv
	}
	p, err := startProcess(string(name), c.LogPath(name), env, argv[0], argv[1:]...)
	if err != nil {
		return err
	}
	c.procs[name] = p
	if err := writePID(c.dir, name, p.cmd.Process.Pid); err != nil {
		c.log.Warn("cannot record process id; StopDir will not find it", "component", name, "error", err)
	}
	c.log.Debug("started", "component", name, "pid", p.cmd.Process.Pid, "log", p.logPath)
	return nil
}

// Kubeconfig is the path of a kubeconfig file for a cluster admin
// (group system:masters).
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// RESTConfig returns a copy of the admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Clientset is an admin clientset for the cluster.
func (c *Cluster) Clientset() kubernetes.Interface { return c.clientset }

// EtcdEndpoint is the client URL of the control plane's etcd (plain HTTP on
// loopback).
func (c *Cluster) EtcdEndpoint() string { return c.etcdURL }

// ServerURL is the API server's HTTPS URL.
func (c *Cluster) ServerURL() string { return c.serverURL }

// AdminToken is a static bearer token for a cluster admin, for clients that
// take a token rather than a kubeconfig.
func (c *Cluster) AdminToken() string { return c.adminToken }

// NodeNames lists the fake nodes Start created.
func (c *Cluster) NodeNames() []string { return append([]string(nil), c.nodeNames...) }

// Dir is the state directory: certificates, kubeconfigs, etcd data, logs.
func (c *Cluster) Dir() string { return c.dir }

// LogPath is the file a component logs to.
func (c *Cluster) LogPath(name Component) string {
	return filepath.Join(c.dir, string(name)+".log")
}

// LogTail returns the last n lines of a component's log.
func (c *Cluster) LogTail(name Component, n int) string {
	return tailFile(c.LogPath(name), n)
}

// Stop ends every process the cluster started, in reverse start order, and
// waits for each to exit. It removes the state directory if Start made it.
// Calling it again returns the first result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.stopped = true
		for i := len(allComponents) - 1; i >= 0; i-- {
			if p := c.procs[allComponents[i]]; p != nil {
				p.terminate()
				_ = os.Remove(pidPath(c.dir, allComponents[i]))
			}
		}
		if c.opts.RealNode {
			// The pods' processes outlive containerd (its shims hold them);
			// end them and free what they mounted.
			c.releaseNode()
		}
		if c.ownDir {
			if err := os.RemoveAll(c.dir); err != nil {
				c.stopErr = fmt.Errorf("remove %s: %w", c.dir, err)
			}
		}
		c.log.Info("local control plane stopped", "dir", c.dir)
	})
	return c.stopErr
}

// Restart stops one component (SIGTERM, or SIGKILL when kill is set, as a
// crash would) and starts it again with the same flags, ports and data. It
// does not wait for the component to be ready again; tests poll for what
// they need.
func (c *Cluster) Restart(name Component, kill bool) error {
	c.mu.Lock()
	p := c.procs[name]
	c.mu.Unlock()
	if p == nil {
		return fmt.Errorf("restart %s: not running in this cluster", name)
	}
	if kill {
		p.kill()
	} else {
		p.terminate()
	}
	if err := c.launch(name); err != nil {
		return fmt.Errorf("restart %s: %w", name, err)
	}
	return nil
}

// WaitReady waits until the API server is ready again and every fake node is
// Ready and untainted, e.g. after Restart. It fails early if a component exits.
func (c *Cluster) WaitReady(ctx context.Context) error {
	if err := c.waitFor(ctx, "kube-apiserver ready", c.components(), c.apiServerReady); err != nil {
		return err
	}
	return c.waitFor(ctx, "nodes ready and untainted", c.components(), c.nodesReady)
}
