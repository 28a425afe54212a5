// Package replica wires one ringfire replica: membership and the slot
// manager over etcd, the sharded cache over the API server, and the
// controllers fed by the slots the replica holds. `ringfire run` and the
// end-to-end tests start replicas through it.
package replica

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	flowv1alpha1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/batchjob"
	"github.com/ringfire/ringfire/controllers/cronjob"
	"github.com/ringfire/ringfire/controllers/flow"
	"github.com/ringfire/ringfire/controllers/job"
	"github.com/ringfire/ringfire/controllers/kit"
	"github.com/ringfire/ringfire/controllers/podgroup"
	"github.com/ringfire/ringfire/controllers/queue"
	"github.com/ringfire/ringfire/controllers/scheduler"
	"github.com/ringfire/ringfire/internal/promreg"
	"github.com/ringfire/ringfire/membership"
	"github.com/ringfire/ringfire/shard"
)

// Config configures a replica.
type Config struct {
	ID     string
	Etcd   *clientv3.Client
	Prefix string
	// Slots of a new ring; 0 for the ring's own or the default.
	Slots        int
	LeaseTTL     time.Duration
	DrainTimeout time.Duration
	// Kube is the API server; nil runs the ring only, with no controllers.
	Kube *rest.Config
	// KubeContentType is the wire format of the clients of Kubernetes'
	// built-in kinds (pods, Events, batch/v1 Jobs, ...): ContentTypeProtobuf
	// or ContentTypeJSON; "" for DefaultKubeContentType. The clients of the
	// Volcano kinds, CRDs, speak JSON whatever it says.
	KubeContentType string
	Workers         int
	// StatusCoalesce spaces a Job's count-only status writes (job.Config).
	StatusCoalesce time.Duration
	// SchedulerName of Jobs that name none, and the one the gang scheduler
	// and the PodGroup controller serve; "" for kit.DefaultSchedulerName.
	SchedulerName string
	// Scheduler runs the gang scheduler, a ring singleton: off unless asked
	// for, so that it never fights a real vc-scheduler.
	Scheduler bool
	// SchedulerPodEvents records a Scheduled Event on every pod the gang
	// scheduler binds (scheduler.Config.PodEvents).
	SchedulerPodEvents bool
	// CronJobs runs the CronJob controller (`--controllers` with cronjob). It
	// is left out, with a warning, on a cluster without the CronJob CRD: its
	// informer would never list, and the replica's cache would wait for it
	// for ever.
	CronJobs bool
	// JobFlows runs the JobFlow and JobTemplate controllers (`--controllers` with jobflow),
	// left out with a warning on a cluster without their CRDs, as CronJobs.
	JobFlows bool
	// BatchJobs runs the controller of batch/v1 Jobs whose spec.managedBy is
	// ringfire.io/job-controller (`--controllers` with batchjob).
	BatchJobs bool
	// NoAdopt turns off adoption (cache.Config.Metadata): the objects of
	// Volcano Jobs that lack the slot label stay invisible.
	NoAdopt bool
	// MaxRequeue of failing Job requests before TerminateJob; 0 for 15.
	MaxRequeue int
	// Clock is the membership's clock (membership.Config.Clock); nil for
	// time.Now. Tests step its wall reading.
	Clock membership.Clock
	// Observe is told of every Job reconcile (tests, tracing).
	Observe    func(key string, start, end time.Time)
	Logger     hclog.Logger
	Registerer prometheus.Registerer
}

// Replica is one running member of the ring with its controllers.
type Replica struct {
	cfg     Config
	Member  *membership.Member
	Manager *shard.Manager
	Cache   *cache.Cache
	Jobs    *job.Controller
	// Queues keeps Queue state and counts; PodGroups gives bare pods a PodGroup.
	Queues    *queue.Controller
	PodGroups *podgroup.Controller
	CronJobs  *cronjob.Controller   // nil unless Config.CronJobs
	JobFlows  *flow.Flows           // nil unless Config.JobFlows
	Templates *flow.Templates       // nil unless Config.JobFlows
	Scheduler *scheduler.Controller // nil unless Config.Scheduler
	BatchJobs *batchjob.Controller  // nil unless Config.BatchJobs

	api apiHealth // the API server probe's last answer (ready.go)
	// quarantine keeps the controllers' poison keys from running; nil
	// without a cluster.
	quarantine *shard.Quarantine
}

// New builds a replica; Run runs it.
func New(cfg Config) (*Replica, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	mcfg := membership.DefaultConfig()
	mcfg.Client, mcfg.Prefix, mcfg.ID = cfg.Etcd, cfg.Prefix, cfg.ID
	if cfg.LeaseTTL > 0 {
		mcfg.TTL = cfg.LeaseTTL
	}
	mcfg.Logger, mcfg.Registerer, mcfg.Clock = cfg.Logger, cfg.Registerer, cfg.Clock
	member, err := membership.New(mcfg)
	if err != nil {
		return nil, err
	}
	manager, err := shard.NewManager(shard.ManagerConfig{
		Client: cfg.Etcd, Member: member, Prefix: cfg.Prefix, Slots: cfg.Slots,
		DrainTimeout: cfg.DrainTimeout, Logger: cfg.Logger, Registerer: cfg.Registerer,
	})
	if err != nil {
		return nil, err
	}
	r := &Replica{cfg: cfg, Member: member, Manager: manager}
	ready := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "ringfire_ready",
		Help: "1 while /readyz answers ok (a member that has read the ring and, with a cluster, sees the API server and has listed its caches), else 0.",
	}, func() float64 {
		if r.Ready() != nil {
			return 0
		}
		return 1
	})
	if err := promreg.Register(cfg.Registerer, ready); err != nil {
		return nil, fmt.Errorf("readiness metric: %w", err)
	}
	if cfg.Kube == nil {
		return r, nil
	}
	// Every request names the replica, so the API server's audit log and
	// its metrics tell the replicas apart.
	cfg.Kube = rest.CopyConfig(cfg.Kube)
	cfg.Kube.UserAgent = UserAgent(cfg.ID)
	// The last check before the wire: no write leaves while the membership
	// is past its fence deadline (shard.FenceWrites says why).
	fencedWrites := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ringfire_writes_fenced_total",
		Help: "API writes refused unsent because the membership was past its fence deadline.",
	})
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(fencedWrites); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	cfg.Kube.Wrap(shard.FenceWrites(func() error {
		err := manager.Valid()
		if err != nil {
			fencedWrites.Inc()
		}
		return err
	}))
	r.cfg.Kube = cfg.Kube
	api, err := newClients(cfg.Kube, cfg.KubeContentType, !cfg.NoAdopt)
	if err != nil {
		return nil, err
	}
	kube, vc, md := api.kube, api.vc, api.md
	r.quarantine, err = shard.NewQuarantine(shard.QuarantineConfig{
		Client: cfg.Etcd, Prefix: cfg.Prefix, Member: cfg.ID, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	r.Cache = cache.New(cache.Config{
		Kube: kube, Volcano: vc, Logger: cfg.Logger, Slots: manager.Slots, Metadata: md, Valid: manager.Valid,
		SlotsReady: func(slots []int) {
			r.Jobs.SlotsReady(slots)
			if r.BatchJobs != nil {
				r.BatchJobs.SlotsReady(slots)
			}
		},
	})
	if cfg.Registerer != nil {
		expect := r.Cache.Expectations()
		lapsed := prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ringfire_expectations_lapsed_total",
			Help: "Creates and deletes of owned objects whose event the cache had not seen when their expectation lapsed; the Job may issue them again.",
		}, func() float64 { return float64(expect.Lapsed()) })
		jobs := r.Cache.Jobs()
		summaries := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ringfire_cache_job_summaries",
			Help: "Jobs of slots this replica does not hold, kept in its cache as summaries (metadata and status.state) rather than in full.",
		}, func() float64 { return float64(jobs.Summaries()) })
		packedBytes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ringfire_cache_job_packed_bytes",
			Help: "Bytes of the whole Jobs kept packed (deflated JSON) behind the summaries, from which a gained slot's Jobs are filled without a list.",
		}, func() float64 { return float64(jobs.PackedBytes()) })
		if err := promreg.Register(cfg.Registerer, lapsed, summaries, packedBytes, r.Cache.WorkloadCollector(), r.Cache.ObjectsCollector()); err != nil {
			return nil, fmt.Errorf("cache metrics: %w", err)
		}
	}
	r.Jobs, err = job.New(job.Config{
		Kube: kube, Volcano: vc, Cache: r.Cache, Ownership: manager, Valid: manager.Valid,
		Workers: cfg.Workers, MaxRequeue: cfg.MaxRequeue, Observe: cfg.Observe, SchedulerName: cfg.SchedulerName,
		StatusCoalesce: cfg.StatusCoalesce, Quarantine: r.quarantine,
		Logger: cfg.Logger, Registerer: cfg.Registerer,
	})
	if err != nil {
		return nil, err
	}
	r.Queues, err = queue.New(queue.Config{
		Kube: kube, Volcano: vc, Ownership: manager, Valid: manager.Valid,
		Shared:     &queue.Informers{Queues: r.Cache.Queues(), Commands: r.Cache.Commands(), PodGroups: r.Cache.QueuePodGroups()},
		MaxRequeue: cfg.MaxRequeue, Logger: cfg.Logger, Registerer: cfg.Registerer,
	})
	if err != nil {
		return nil, err
	}
	schedulers := []string{kit.DefaultSchedulerName}
	if cfg.SchedulerName != "" {
		schedulers = []string{cfg.SchedulerName}
	}
	r.PodGroups, err = podgroup.New(podgroup.Config{
		Kube: kube, Volcano: vc, Ownership: manager, Valid: manager.Valid, SchedulerNames: schedulers,
		MaxRequeue: cfg.MaxRequeue, Logger: cfg.Logger, Registerer: cfg.Registerer, Quarantine: r.quarantine,
	})
	if err != nil {
		return nil, err
	}
	drainers := []shard.Drainer{r.Jobs.Drainer(), r.Queues.Drainer(), r.PodGroups.Drainer()}
	listeners := []shard.Listener{r.Cache, r.Queues, r.PodGroups}
	if cfg.CronJobs && !serves(cfg.Kube, cfg.Logger, batchv1alpha1.SchemeGroupVersion.String(), "cronjobs") {
		cfg.Logger.Warn("the API server has no CronJob CRD (cronjobs." + batchv1alpha1.SchemeGroupVersion.Group + "): the CronJob controller is off; " +
			"install deploy/crds/batch.volcano.sh_cronjobs.yaml and restart the replica to run it")
		cfg.CronJobs = false
	}
	if cfg.JobFlows && !serves(cfg.Kube, cfg.Logger, flowv1alpha1.SchemeGroupVersion.String(), "jobflows", "jobtemplates") {
		cfg.Logger.Warn("the API server has no JobFlow or JobTemplate CRD (" + flowv1alpha1.SchemeGroupVersion.Group + "): the JobFlow controllers are off; " +
			"install deploy/crds/flow.volcano.sh_jobflows.yaml and flow.volcano.sh_jobtemplates.yaml and restart the replica to run them")
		cfg.JobFlows = false
	}
	if cfg.JobFlows {
		fcfg := flow.Config{
			Kube: kube, Volcano: vc, Ownership: manager, Valid: manager.Valid,
			JobFlows: r.Cache.JobFlows(), JobTemplates: r.Cache.JobTemplates(), Jobs: r.Cache.Jobs(),
			Workers: cfg.Workers, MaxRequeue: cfg.MaxRequeue, StatusCoalesce: cfg.StatusCoalesce, Logger: cfg.Logger, Registerer: cfg.Registerer,
			Quarantine: r.quarantine,
		}
		if r.JobFlows, err = flow.NewFlows(fcfg); err != nil {
			return nil, err
		}
		if r.Templates, err = flow.NewTemplates(fcfg); err != nil {
			return nil, err
		}
		drainers = append(drainers, r.JobFlows.Drainer(), r.Templates.Drainer())
		listeners = append(listeners, r.JobFlows, r.Templates)
	}
	if cfg.CronJobs {
		r.CronJobs, err = cronjob.New(cronjob.Config{
			Kube: kube, Volcano: vc, Ownership: manager, Valid: manager.Valid,
			CronJobs: r.Cache.CronJobs(), Jobs: r.Cache.Jobs(), Workers: cfg.Workers, MaxRequeue: cfg.MaxRequeue, Logger: cfg.Logger, Registerer: cfg.Registerer,
			Quarantine: r.quarantine,
		})
		if err != nil {
			return nil, err
		}
		drainers, listeners = append(drainers, r.CronJobs.Drainer()), append(listeners, r.CronJobs)
	}
	if cfg.BatchJobs {
		r.BatchJobs, err = batchjob.New(batchjob.Config{
			Kube: kube, Ownership: manager, Valid: manager.Valid, Cache: r.Cache, Quarantine: r.quarantine,
			Workers: cfg.Workers, MaxRequeue: cfg.MaxRequeue, Logger: cfg.Logger, Registerer: cfg.Registerer,
		})
		if err != nil {
			return nil, err
		}
		drainers, listeners = append(drainers, r.BatchJobs.Drainer()), append(listeners, r.BatchJobs)
	}
	if cfg.Scheduler {
		r.Scheduler, err = scheduler.New(scheduler.Config{
			Kube: kube, Volcano: vc, Ownership: manager, Valid: manager.Valid, SchedulerNames: schedulers,
			PodEvents: cfg.SchedulerPodEvents, Logger: cfg.Logger, Registerer: cfg.Registerer,
		})
		if err != nil {
			return nil, err
		}
		drainers, listeners = append(drainers, r.Scheduler), append(listeners, r.Scheduler)
	}
	for _, d := range drainers {
		manager.AddDrainer(d)
	}
	for _, l := range listeners {
		manager.AddListener(l)
	}
	return r, nil
}

// Run runs the replica until ctx is done, then hands its slots over and
// leaves the ring. It returns an error only for a configuration that can
// never work (a mismatched slot count).
func (r *Replica) Run(ctx context.Context) error {
	if r.Cache == nil {
		return r.Manager.Run(ctx)
	}
	// Controllers outlive the manager's graceful stop: the manager drains
	// them before it leaves, and only then are they stopped.
	work, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	var wg sync.WaitGroup
	wg.Go(func() { r.Jobs.Run(work) })
	wg.Go(func() { r.Queues.Run(work) })
	wg.Go(func() { r.PodGroups.Run(work) })
	wg.Go(func() { r.probeAPIServer(work) })
	wg.Go(func() { r.quarantine.Run(work) })
	if r.CronJobs != nil {
		wg.Go(func() { r.CronJobs.Run(work) })
	}
	if r.JobFlows != nil {
		wg.Go(func() { r.JobFlows.Run(work) })
		wg.Go(func() { r.Templates.Run(work) })
	}
	if r.Scheduler != nil {
		wg.Go(func() { r.Scheduler.Run(work) })
	}
	if r.BatchJobs != nil {
		wg.Go(func() { r.BatchJobs.Run(work) })
	}
	defer wg.Wait()
	cacheErr := make(chan error, 1)
	go func() { cacheErr <- r.Cache.Start(work) }()
	err := r.Manager.Run(ctx)
	stopWork()
	if cerr := <-cacheErr; cerr != nil && !errors.Is(cerr, context.Canceled) && work.Err() == nil {
		return cerr
	}
	return err
}

// serves reports whether the API server serves every one of resources in the group version
// gv. A cluster with an older Volcano has Jobs but no CronJob or JobFlow CRDs, and their
// informers would never list, nor would the cache they share: the controllers are left out
// then, with a warning that says how to get them. When the API server cannot be asked, the
// controllers stay (the cache's reminders say what it waits for).
func serves(kube *rest.Config, log hclog.Logger, gv string, resources ...string) bool {
	cfg := rest.CopyConfig(kube)
	cfg.Timeout = 10 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return true
	}
	list, err := dc.ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		log.Debug("cannot tell whether the API server serves "+gv+"; running its controllers", "error", err)
		return true
	}
	served := map[string]bool{}
	for _, r := range list.APIResources {
		served[r.Name] = true
	}
	for _, r := range resources {
		if !served[r] {
			return false
		}
	}
	return true
}
