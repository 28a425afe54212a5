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

	"github.com/ringfire/ringfire/controllers/job"
	"github.com/ringfire/ringfire/controllers/kit"
	"github.com/ringfire/ringfire/internal/certs"
	"github.com/ringfire/ringfire/internal/kubemetrics"
	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/internal/opsserver"
	"github.com/ringfire/ringfire/internal/promreg"
	"github.com/ringfire/ringfire/internal/replica"
	"github.com/ringfire/ringfire/internal/version"
)

type runFlags struct {
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

// runFlagSet is the flags of `ringfire run`, parsed into f.
func runFlagSet(f *runFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	f.etcd.register(fs)
	f.kube.register(fs)
	fs.StringVar(&f.id, "id", defaultID(), "member id in the ring: the pod name in a StatefulSet ($POD_NAME), else the hostname")
	fs.IntVar(&f.slots, "slots", 0, "slot count of a new ring (0: 1024, or the existing ring's count); fixed once the ring exists")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", 5*time.Second, "membership lease TTL; a dead replica's slots move after at most this long")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", 5*time.Second, "how long in-flight work of a handed-over slot may finish before it is cancelled")
	fs.StringVar(&f.scheduler, "scheduler-name", kit.DefaultSchedulerName, "scheduler of Jobs that name none, and the one the gang scheduler serves")
	fs.StringVar(&f.controllers, "controllers", "job,queue,podgroup,cronjob,jobflow,batchjob", "controllers to run; add scheduler for ringfire's gang scheduler (leave it out beside a real vc-scheduler); jobflow is the JobFlow and JobTemplate controllers; batchjob runs the batch/v1 Jobs whose spec.managedBy is ringfire.io/job-controller; cronjob and jobflow turn themselves off on a cluster without their CRDs")
	fs.BoolVar(&f.podEvents, "scheduler-pod-events", false, "the gang scheduler records a Scheduled Event on every pod it binds, as kube-scheduler does (one more write per pod; the PodGroup gets its Scheduled Event either way)")
	fs.IntVar(&f.workers, "workers", 8, "Jobs reconciled in parallel (one Job is never in two workers)")
	fs.BoolVar(&f.adopt, "adopt", true, "label the objects of Volcano Jobs that lack the ringfire.io/slot label (made by vc-controller-manager before the switch) when slots are gained; turn off once no such object is left (docs/migration.md)")
	fs.DurationVar(&f.coalesce, "status-coalesce", job.DefaultStatusCoalesce, "changes of a Job's pod counts are merged over this window into one status write, at most one per window (a new phase is written at once); negative: every change is written")
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
	var f runFlags
	fs := runFlagSet(&f)
	if err := fs.Parse(args); err != nil {
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

// run wires a replica: etcd (embedded unless endpoints are given), the
// membership, the slot manager and the ops server; it returns after a
// graceful stop once ctx is done.
func run(ctx context.Context, f runFlags, log hclog.Logger) error {
	if err := f.kube.checkContentType(); err != nil {
		return err
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
	controllers, err := parseControllers(f.controllers)
	if err != nil {
		return err
	}
	clock, err := testWallStep(ctx, log)
	if err != nil {
		return err
	}
	r, err := replica.New(replica.Config{
		Scheduler: controllers.scheduler, SchedulerPodEvents: f.podEvents, CronJobs: controllers.cronjob, JobFlows: controllers.jobflow, BatchJobs: controllers.batchjob,
		ID: f.id, Etcd: client, Prefix: f.etcd.prefix, Slots: f.slots, LeaseTTL: f.leaseTTL,
		DrainTimeout: f.drainTimeout, Kube: kubeCfg, KubeContentType: f.kube.contentType, NoAdopt: !f.adopt, Workers: f.workers, StatusCoalesce: f.coalesce, SchedulerName: f.scheduler, Logger: log, Registerer: reg,
		Clock: clock,
	})
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
// its certificates' expiry and client-go; replica.New registers the rest.
func registerProcessMetrics(reg prometheus.Registerer, expiry *certs.Expiry) error {
	if err := promreg.Register(reg, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), version.Get().Metric(), expiry); err != nil {
		return err
	}
	return kubemetrics.Register(reg)
}

// chosenControllers are the optional controllers --controllers asks for.
type chosenControllers struct{ scheduler, cronjob, jobflow, batchjob bool }

// parseControllers checks --controllers and reports which optional
// controllers it asks for. The Job, Queue and PodGroup controllers always run.
func parseControllers(list string) (chosenControllers, error) {
	var c chosenControllers
	for _, name := range strings.Split(list, ",") {
		switch strings.TrimSpace(name) {
		case "job", "queue", "podgroup", "":
		case "cronjob":
			c.cronjob = true
		case "jobflow":
			c.jobflow = true
		case "batchjob":
			c.batchjob = true
		case "scheduler":
			c.scheduler = true
		default:
			return chosenControllers{}, fmt.Errorf("--controllers: unknown controller %q (known: job, queue, podgroup, cronjob, jobflow, batchjob, scheduler)", name)
		}
	}
	return c, nil
}
