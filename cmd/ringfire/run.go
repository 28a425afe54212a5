package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/rest"

	"github.com/ringfire/ringfire/internal/certs"
	"github.com/ringfire/ringfire/internal/guard"
	"github.com/ringfire/ringfire/internal/kubemetrics"
	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/internal/opsserver"
	"github.com/ringfire/ringfire/internal/promreg"
	"github.com/ringfire/ringfire/internal/replica"
	"github.com/ringfire/ringfire/internal/version"
	"github.com/ringfire/ringfire/membership"
	"github.com/ringfire/ringfire/shard"
)

// runOptions are the options of `ringfire run`, one field a flag. Validate
// checks them all before anything starts: no etcd, embedded or dialled, and
// no client is made for options that cannot work.
type runOptions struct {
	etcd          etcdFlags
	kube          kubeFlags
	id            string
	slots         int
	leaseTTL      time.Duration
	drainTimeout  time.Duration
	metricsAddr   string
	metricsSecure bool
	metricsCerts  string
	healthAddr    string
	pprofAddr     string
	workers       int
	coalesce      time.Duration
	podListRate   float64
	quarantine    time.Duration
	fair          bool
	adopt         bool
	scheduler     string
	podEvents     bool
	controllers   string
	logFormat     string
	logLevel      string
}

func defaultID() string {
	if name := os.Getenv("POD_NAME"); name != "" {
		return name
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "ringfire"
	}
	return host
}

// runFlagSet is the flags of `ringfire run`, parsed into f. Their defaults
// are replica.DefaultConfig's.
func runFlagSet(f *runOptions) *flag.FlagSet {
	def := replica.DefaultConfig()
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	f.etcd.register(fs)
	f.kube.register(fs)
	fs.StringVar(&f.id, "id", defaultID(), "member id in the ring: the pod name in a StatefulSet ($POD_NAME), else the hostname")
	fs.IntVar(&f.slots, "slots", def.Slots, fmt.Sprintf("slot count of a new ring (0: %d, or the existing ring's count); fixed once the ring exists", shard.DefaultSlots))
	fs.DurationVar(&f.leaseTTL, "lease-ttl", def.LeaseTTL, "membership lease TTL, rounded to whole seconds; a dead replica's slots move after at most this long")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", def.DrainTimeout, "how long in-flight work of a handed-over slot may finish before it is cancelled")
	fs.StringVar(&f.scheduler, "scheduler-name", def.SchedulerName, "scheduler of Jobs that name none, and the one the gang scheduler serves")
	fs.StringVar(&f.controllers, "controllers", strings.Join(def.Controllers, ","), "controllers to run, of "+strings.Join(replica.KnownControllers(), ", ")+
		"; job, queue and podgroup cannot be left out; add scheduler for ringfire's gang scheduler (leave it out beside a real vc-scheduler); jobflow is the JobFlow and JobTemplate controllers; "+
		"batchjob runs the batch/v1 Jobs whose spec.managedBy is ringfire.io/job-controller; cronjob and jobflow turn themselves off on a cluster without their CRDs")
	fs.BoolVar(&f.podEvents, "scheduler-pod-events", def.SchedulerPodEvents, "the gang scheduler records a Scheduled Event on every pod it binds, as kube-scheduler does (one more write per pod; the PodGroup gets its Scheduled Event either way)")
	fs.IntVar(&f.workers, "workers", def.Workers, "Jobs reconciled in parallel (one Job is never in two workers); also the workers of the JobFlow, JobTemplate, CronJob and batch/v1 Job controllers")
	fs.BoolVar(&f.adopt, "adopt", !def.NoAdopt, "label the objects of Volcano Jobs that lack the ringfire.io/slot label (made by vc-controller-manager before the switch) when slots are gained; turn off once no such object is left (docs/migration.md)")
	fs.Float64Var(&f.podListRate, "pod-list-rate", def.PodListRate, "pods a second the replica's lists of its slots' pods take together, a page at a time; a failover's lists then leave the API server room for the moved Jobs' own reads and writes (docs/operations.md); 0: as fast as the API server answers")
	fs.DurationVar(&f.quarantine, "quarantine-time-budget", def.QuarantineTimeBudget, "how long one reconcile may go without progress (no API request of its answered) before its key is quarantined; a slow API server's request timeout must fit well inside it (docs/jobs.md, \"Poison Jobs\")")
	fs.BoolVar(&f.fair, "fair-namespaces", !def.Unfair, "share each replica's workers and API rate limit fairly between namespaces, so that one namespace's burst of work waits behind itself, not in front of others (docs/operations.md); off serves work in the order it came, for comparisons")
	fs.DurationVar(&f.coalesce, "status-coalesce", def.StatusCoalesce, "changes of a Job's pod counts are merged over this window into one status write, at most one per window (a new phase is written at once); 0 or negative: every change is written at once")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "address for /metrics, the status page (/) and /status.json; empty: none")
	fs.BoolVar(&f.metricsSecure, "metrics-secure", false, "serve the metrics address over HTTPS, only to callers whose bearer token the API server accepts (TokenReview) and who may get the path (SubjectAccessReview; the ClusterRole ringfire-metrics-reader); needs a cluster. The manifests of deploy/ turn it on; off, the address serves plain HTTP to anyone who reaches it")
	fs.StringVar(&f.metricsCerts, "metrics-cert-dir", "", "with --metrics-secure: directory of the serving certificate, tls.crt and tls.key, reloaded when they change; empty: a self-signed certificate made at start")
	fs.StringVar(&f.healthAddr, "health-probe-bind-address", ":8081", "address for the probes /healthz and /readyz; empty: none")
	fs.StringVar(&f.pprofAddr, "pprof-bind-address", "", "address for Go's profiles under /debug/pprof/, e.g. 127.0.0.1:6060; empty (the default): not served")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: trace, debug, info, warn, error")
	return fs
}

func runCommand(args []string) error {
	var f runOptions
	fs := runFlagSet(&f)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := f.Validate(); err != nil {
		return err
	}
	log, err := newLogger(f.logFormat, f.logLevel)
	if err != nil {
		return err
	}
	routeKlog(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, f, log)
}

func newLogger(format, level string) (hclog.Logger, error) {
	lvl := hclog.LevelFromString(level)
	if lvl == hclog.NoLevel {
		return nil, fmt.Errorf("--log-level %q: use trace, debug, info, warn or error", level)
	}
	if format != "text" && format != "json" {
		return nil, fmt.Errorf("--log-format %q: use text or json", format)
	}
	return hclog.New(&hclog.LoggerOptions{Name: "ringfire", Level: lvl, JSONFormat: format == "json", Output: os.Stderr}), nil
}

// Validate reports every option that cannot work, before anything starts.
// It changes nothing.
func (f *runOptions) Validate() error {
	var errs []error
	if err := f.kube.checkContentType(); err != nil {
		errs = append(errs, err)
	}
	if hclog.LevelFromString(f.logLevel) == hclog.NoLevel {
		errs = append(errs, fmt.Errorf("--log-level %q: use trace, debug, info, warn or error", f.logLevel))
	}
	if f.logFormat != "text" && f.logFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format %q: use text or json", f.logFormat))
	}
	if f.id == "" || strings.Contains(f.id, "/") {
		errs = append(errs, fmt.Errorf("--id %q: must be non-empty and contain no '/'", f.id))
	}
	if p := f.etcd.prefix; !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		errs = append(errs, fmt.Errorf("--etcd-prefix %q: must start with '/' and not end with one", p))
	}
	if f.slots < 0 {
		errs = append(errs, fmt.Errorf("--slots %d: must not be negative", f.slots))
	}
	if f.leaseTTL <= 0 {
		errs = append(errs, fmt.Errorf("--lease-ttl %v: must be positive", f.leaseTTL))
	}
	if f.drainTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--drain-timeout %v: must be positive", f.drainTimeout))
	}
	if f.workers < 1 {
		errs = append(errs, fmt.Errorf("--workers %d: at least 1", f.workers))
	}
	if f.quarantine <= 0 {
		errs = append(errs, fmt.Errorf("--quarantine-time-budget %v: must be positive", f.quarantine))
	}
	if f.scheduler == "" {
		errs = append(errs, errors.New("--scheduler-name is empty"))
	}
	if err := replica.ValidateControllers(replica.ParseControllers(f.controllers)); err != nil {
		errs = append(errs, fmt.Errorf("--controllers %q: %w", f.controllers, err))
	}
	return errors.Join(errs...)
}

// replicaConfig is the replica the options describe, on the etcd client
// and the API server run has reached.
func (f *runOptions) replicaConfig(client *clientv3.Client, kube *rest.Config, clock membership.Clock, log hclog.Logger, reg prometheus.Registerer) replica.Config {
	cfg := replica.DefaultConfig()
	cfg.ID, cfg.Etcd, cfg.Prefix, cfg.Slots = f.id, client, f.etcd.prefix, f.slots
	cfg.LeaseTTL, cfg.DrainTimeout = f.leaseTTL, f.drainTimeout
	cfg.Kube, cfg.KubeContentType, cfg.NoAdopt = kube, f.kube.contentType, !f.adopt
	cfg.Workers, cfg.StatusCoalesce, cfg.SchedulerName = f.workers, f.coalesce, f.scheduler
	cfg.PodListRate, cfg.QuarantineTimeBudget, cfg.Unfair = f.podListRate, f.quarantine, !f.fair
	cfg.Controllers, cfg.SchedulerPodEvents = replica.ParseControllers(f.controllers), f.podEvents
	cfg.Clock, cfg.Logger, cfg.Registerer = clock, log, reg
	return cfg
}

// run wires a replica: etcd (embedded unless endpoints are given), the
// membership, the slot manager and the ops server; it returns after a
// graceful stop once ctx is done. The options are checked first, before
// the embedded etcd starts.
func run(ctx context.Context, f runOptions, log hclog.Logger) error {
	if err := f.Validate(); err != nil {
		return err
	}
	// Before any informer runs: a panic in one of client-go's goroutines is counted and
	// logged, not re-panicked (guard.ContainClientGo says why both this and the wrappers).
	guard.ContainClientGo(log.Named("client-go"))
	if limit, set := shard.SetSoftMemoryLimit(); set {
		log.Info("Go's soft memory limit set from the memory cgroup's (GOMEMLIMIT unset)", "limit_mib", limit>>20)
	} else if limit > 0 {
		log.Info("Go's soft memory limit from GOMEMLIMIT", "limit_mib", limit>>20)
	}
	endpoints := []string{}
	if f.etcd.endpoints == "" {
		etcd, err := localetcd.Start(localetcd.Options{Dir: f.etcd.dataDir, Logger: log.Named("etcd"), LogLevel: "error"})
		if err != nil {
			return fmt.Errorf("embedded etcd: %w", err)
		}
		defer etcd.Stop()
		if err := os.WriteFile(f.etcd.endpointFile(), []byte(etcd.Endpoint()+"\n"), 0o600); err != nil {
			return fmt.Errorf("record the embedded etcd endpoint: %w", err)
		}
		defer os.Remove(f.etcd.endpointFile())
		log.Info("no --etcd-endpoints: running an embedded etcd, a ring of one", "endpoint", etcd.Endpoint(), "data_dir", f.etcd.dataDir)
		endpoints = append(endpoints, etcd.Endpoint())
	} else {
		var err error
		if endpoints, err = f.etcd.endpointList(); err != nil {
			return err
		}
	}
	expiry := f.etcd.certificateExpiry(endpoints)
	client, err := f.etcd.client(endpoints)
	if err != nil {
		return err
	}
	defer client.Close()

	reg := prometheus.NewRegistry()
	if err := registerProcessMetrics(reg, expiry); err != nil {
		return err
	}

	var wg sync.WaitGroup
	opsCtx, stopOps := context.WithCancel(context.Background())
	defer func() { stopOps(); wg.Wait() }()

	kubeCfg, err := f.kube.restConfig(log)
	if err != nil {
		return err
	}
	clock, err := testWallStep(ctx, log)
	if err != nil {
		return err
	}
	r, err := replica.New(f.replicaConfig(client, kubeCfg, clock, log, reg))
	if err != nil {
		return err
	}
	var secure *opsserver.Secure
	if f.metricsSecure {
		if kubeCfg == nil {
			return errors.New("--metrics-secure: no cluster to review the callers' tokens with; give --kubeconfig, or --metrics-secure=false")
		}
		reviews, err := replica.BuiltinConfig(kubeCfg, f.kube.contentType)
		if err != nil {
			return err
		}
		secure = &opsserver.Secure{Kube: reviews, CertDir: f.metricsCerts}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := opsserver.Serve(opsCtx, opsserver.Config{
			MetricsAddr: f.metricsAddr, HealthAddr: f.healthAddr, PprofAddr: f.pprofAddr,
			Gatherer: reg, Logger: log, Status: r.Manager.Status,
			// Ready covers the ring and, with a cluster, the API server.
			Ready:  r.Ready,
			Secure: secure,
		})
		if err != nil {
			log.Error("ops server stopped", "error", err)
		}
	}()

	log.Info("starting replica", "id", f.id, "version", version.Get().Version, "prefix", f.etcd.prefix, "lease_ttl", f.leaseTTL)
	if err := r.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	log.Info("stopped")
	return nil
}

// registerProcessMetrics registers the metrics of the process, the build,
// its certificates' expiry, the panics its informers' goroutines recovered
// (guard) and client-go; replica.New registers the rest.
func registerProcessMetrics(reg prometheus.Registerer, expiry *certs.Expiry) error {
	if err := promreg.Register(reg, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), version.Get().Metric(), expiry); err != nil {
		return err
	}
	if err := guard.Register(reg); err != nil {
		return err
	}
	return kubemetrics.Register(reg)
}
