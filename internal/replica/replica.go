// Package replica wires one ringfire replica: membership and the slot
// manager over etcd, the sharded cache over the API server, and the
// controllers fed by the slots the replica holds. `ringfire run` and the
// end-to-end tests start replicas through it.
package replica

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/controllers/batchjob"
	"github.com/ringfire/ringfire/controllers/cronjob"
	"github.com/ringfire/ringfire/controllers/flow"
	"github.com/ringfire/ringfire/controllers/job"
	"github.com/ringfire/ringfire/controllers/kit"
	"github.com/ringfire/ringfire/controllers/podgroup"
	"github.com/ringfire/ringfire/controllers/queue"
	"github.com/ringfire/ringfire/controllers/scheduler"
	"github.com/ringfire/ringfire/internal/policycheck"
	"github.com/ringfire/ringfire/internal/promreg"
	"github.com/ringfire/ringfire/membership"
	"github.com/ringfire/ringfire/shard"
)

// Config configures a replica. Start from DefaultConfig: its zero value
// is not a working configuration, and Validate says what is missing.
type Config struct {
	ID     string
	Etcd   *clientv3.Client
	Prefix string
	// Slots of a new ring; 0 for the ring's own or shard.DefaultSlots.
	Slots int
	// LeaseTTL is the membership's lease, rounded to whole seconds, at least
	// one (membership.Config.SetTTL).
	LeaseTTL time.Duration
	// DrainTimeout is shard.ManagerConfig.DrainTimeout.
	DrainTimeout time.Duration
	// Kube is the API server; nil runs the ring only, with no controllers.
	Kube *rest.Config
	// KubeContentType is the wire format of the clients of Kubernetes'
	// built-in kinds (pods, Events, batch/v1 Jobs, ...): ContentTypeProtobuf
	// or ContentTypeJSON. The clients of the Volcano kinds, CRDs, speak
	// JSON whatever it says.
	KubeContentType string
	// Workers of each controller that takes a count: the Job, JobFlow,
	// JobTemplate, CronJob and batch/v1 Job controllers.
	Workers int
	// StatusCoalesce spaces a Job's count-only status writes (job.Config); 0
	// or negative writes each at once.
	StatusCoalesce time.Duration
	// SchedulerName of Jobs that name none, and the one the gang scheduler
	// and the PodGroup controller serve.
	SchedulerName string
	// SchedulerPodEvents records a Scheduled Event on every pod the gang
	// scheduler binds (scheduler.Config.PodEvents).
	SchedulerPodEvents bool
	// Controllers are the names of the controllers to run (KnownControllers;
	// `--controllers`). The required ones must be there (ValidateControllers);
	// those that need CRDs turn themselves off, with a warning, on a cluster
	// without them.
	Controllers []string
	// NoAdopt turns off adoption (cache.Config.Metadata): the objects of
	// Volcano Jobs that lack the slot label stay invisible.
	NoAdopt bool
	// PodListRate paces the cache's lists of the slots' pods, in pods a
	// second for the replica's lists together (cache.Config.PodListRate);
	// 0 does not pace them.
	PodListRate float64
	// QuarantineTimeBudget is how long a reconcile may go without progress (no API
	// request of its answered) before its key is quarantined (shard.QuarantineConfig.
	// TimeBudget; 2 min by default).
	QuarantineTimeBudget time.Duration
	// Unfair turns off the fair share between namespaces of the dispatchers' workers and of
	// the API clients' rate limits (`--fair-namespaces=false`): for comparisons only.
	Unfair bool
	// MaxRequeue is the retries of a request failing for good before it is
	// given up (for a Job: TerminateJob); 0 gives up at the first failure,
	// -1 retries for ever.
	MaxRequeue int
	// Clock is the membership's clock (membership.Config.Clock); nil for
	// the system's. Tests step its wall reading.
	Clock membership.Clock
	// Observe is told of every Job reconcile (tests, tracing).
	Observe    func(key string, start, end time.Time)
	Logger     hclog.Logger
	Registerer prometheus.Registerer
}

// DefaultWorkers is Config.Workers' default, `--workers`.
const DefaultWorkers = 8

// DefaultConfig returns a Config with every default filled in; the caller
// adds what only it knows (ID, Etcd, Kube).
func DefaultConfig() Config {
	mcfg := membership.DefaultConfig()
	return Config{
		Prefix:               mcfg.Prefix,
		LeaseTTL:             mcfg.TTL,
		DrainTimeout:         shard.DefaultManagerConfig().DrainTimeout,
		KubeContentType:      DefaultKubeContentType,
		Workers:              DefaultWorkers,
		StatusCoalesce:       job.DefaultStatusCoalesce,
		SchedulerName:        kit.DefaultSchedulerName,
		Controllers:          DefaultControllers(),
		MaxRequeue:           kit.DefaultMaxRequeue,
		QuarantineTimeBudget: shard.DefaultQuarantineConfig().TimeBudget,
		Logger:               hclog.NewNullLogger(),
	}
}

// Validate reports every field of c that cannot work. It changes nothing.
func (c *Config) Validate() error {
	var errs []error
	if c.ID == "" {
		errs = append(errs, errors.New("an ID is required"))
	}
	if c.Etcd == nil {
		errs = append(errs, errors.New("an etcd client is required"))
	}
	if c.Slots < 0 {
		errs = append(errs, fmt.Errorf("slots %d: must not be negative", c.Slots))
	}
	if c.LeaseTTL <= 0 {
		errs = append(errs, fmt.Errorf("lease TTL %v: must be positive (it is rounded to whole seconds, at least one)", c.LeaseTTL))
	}
	if c.DrainTimeout <= 0 {
		errs = append(errs, fmt.Errorf("drain timeout %v: must be positive", c.DrainTimeout))
	}
	if c.KubeContentType != ContentTypeProtobuf && c.KubeContentType != ContentTypeJSON {
		errs = append(errs, fmt.Errorf("kube content type %q: use %q or %q", c.KubeContentType, ContentTypeProtobuf, ContentTypeJSON))
	}
	if c.Workers < 1 {
		errs = append(errs, fmt.Errorf("workers %d: at least 1", c.Workers))
	}
	if c.PodListRate < 0 {
		errs = append(errs, fmt.Errorf("pod list rate %v: 0 does not pace, more paces at that many pods a second", c.PodListRate))
	}
	if c.QuarantineTimeBudget <= 0 {
		errs = append(errs, fmt.Errorf("quarantine time budget %v: must be positive", c.QuarantineTimeBudget))
	}
	if c.MaxRequeue < -1 {
		errs = append(errs, fmt.Errorf("max requeue %d: -1 retries for ever, 0 or more bounds the retries", c.MaxRequeue))
	}
	if c.SchedulerName == "" {
		errs = append(errs, errors.New("a scheduler name is required"))
	}
	if err := ValidateControllers(c.Controllers); err != nil {
		errs = append(errs, err)
	}
	if c.Logger == nil {
		errs = append(errs, errors.New("a logger is required"))
	}
	return errors.Join(errs...)
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
	CronJobs  *cronjob.Controller   // nil unless the cronjob controller runs
	JobFlows  *flow.Flows           // nil unless the jobflow controller runs
	Templates *flow.Templates       // nil unless the jobflow controller runs
	Scheduler *scheduler.Controller // nil unless the scheduler runs
	BatchJobs *batchjob.Controller  // nil unless the batchjob controller runs

	// Running are the names of the controllers New built, in the table's
	// order: Config.Controllers less those whose CRDs the cluster lacks.
	Running []string
	// run are the controllers' goroutines, started by Run.
	run []func(context.Context)

	api apiHealth // the API server probe's last answer (ready.go)
	// quarantine keeps the controllers' poison keys from running; nil
	// without a cluster.
	quarantine *shard.Quarantine
}

// New validates cfg and builds a replica; Run runs it.
func New(cfg Config) (*Replica, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("replica config: %w", err)
	}
	mcfg := membership.DefaultConfig()
	mcfg.Client, mcfg.Prefix, mcfg.ID = cfg.Etcd, cfg.Prefix, cfg.ID
	mcfg.SetTTL(cfg.LeaseTTL)
	mcfg.Logger, mcfg.Registerer = cfg.Logger, cfg.Registerer
	if cfg.Clock != nil {
		mcfg.Clock = cfg.Clock
	}
	member, err := membership.New(mcfg)
	if err != nil {
		return nil, err
	}
	scfg := shard.DefaultManagerConfig()
	scfg.Client, scfg.Member, scfg.Prefix, scfg.Slots = cfg.Etcd, member, cfg.Prefix, cfg.Slots
	scfg.DrainTimeout, scfg.Logger, scfg.Registerer = cfg.DrainTimeout, cfg.Logger, cfg.Registerer
	manager, err := shard.NewManager(scfg)
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
	api, err := r.connect(manager)
	if err != nil {
		return nil, err
	}
	if err := r.buildCache(api, manager); err != nil {
		return nil, err
	}
	if err := r.checkPolicies(); err != nil {
		return nil, err
	}
	return r, r.buildControllers(api, manager)
}

// checkPolicies adds the check that the admission policies ringfire relies on are installed
// (internal/policycheck) to what the replica runs.
func (r *Replica) checkPolicies() error {
	cfg := rest.CopyConfig(r.cfg.Kube)
	cfg.Timeout = 30 * time.Second
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("admission policy check: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("admission policy check: %w", err)
	}
	checker, err := policycheck.New(client, dc, r.cfg.Registerer, r.cfg.Logger.Named("policies"))
	if err != nil {
		return err
	}
	r.run = append(r.run, checker.Run)
	return nil
}

// connect points the replica's clients at the API server, with every
// write fenced by the membership.
func (r *Replica) connect(manager *shard.Manager) (clients, error) {
	cfg := &r.cfg
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
			return clients{}, fmt.Errorf("register metrics: %w", err)
		}
	}
	cfg.Kube.Wrap(shard.FenceWrites(func() error {
		err := manager.Valid()
		if err != nil {
			fencedWrites.Inc()
		}
		return err
	}))
	// Each request a reconcile's context asked that the API server answered is progress of
	// that reconcile: the quarantine's time budget counts from the last (shard/progress.go).
	cfg.Kube.Wrap(shard.ProgressTransport)
	return newClients(cfg.Kube, cfg.KubeContentType, !cfg.NoAdopt, !cfg.Unfair)
}

// buildCache builds the quarantine and the sharded cache the controllers share.
func (r *Replica) buildCache(api clients, manager *shard.Manager) error {
	cfg := r.cfg
	var err error
	qcfg := shard.DefaultQuarantineConfig()
	qcfg.Client, qcfg.Prefix, qcfg.Member, qcfg.Logger = cfg.Etcd, cfg.Prefix, cfg.ID, cfg.Logger
	qcfg.Valid = manager.Valid // a replica past its lease suspects no run of time or memory
	qcfg.TimeBudget = cfg.QuarantineTimeBudget
	r.quarantine, err = shard.NewQuarantine(qcfg)
	if err != nil {
		return err
	}
	r.Cache = cache.New(cache.Config{
		Kube: api.kube, Volcano: api.vc, Logger: cfg.Logger, Slots: manager.Slots, Metadata: api.md, Valid: manager.Valid,
		PodListRate: cfg.PodListRate,
		SlotsEarly: func(slots []int) {
			r.Jobs.SlotsEarly(slots)
			if r.BatchJobs != nil {
				r.BatchJobs.SlotsEarly(slots)
			}
		},
		SlotsReady: func(slots []int) {
			r.Jobs.SlotsReady(slots)
			if r.BatchJobs != nil {
				r.BatchJobs.SlotsReady(slots)
			}
		},
	})
	if cfg.Registerer == nil {
		return nil
	}
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
		return fmt.Errorf("cache metrics: %w", err)
	}
	return nil
}

// buildControllers builds the controllers of the table that Config.Controllers
// names, leaving out, with a warning, those whose CRDs the cluster lacks, and
// registers them with the slot manager. The cache is the first listener: it
// gains a slot's objects before any controller hears of the slot.
func (r *Replica) buildControllers(api clients, manager *shard.Manager) error {
	d := deps{cfg: r.cfg, api: api, manager: manager, schedulers: []string{r.cfg.SchedulerName},
		kit: kit.Config{
			Kube: api.kube, Volcano: api.vc, Ownership: manager, Valid: manager.Valid,
			Logger: r.cfg.Logger, Registerer: r.cfg.Registerer,
		},
		work: kit.Work{Workers: r.cfg.Workers, MaxRequeue: r.cfg.MaxRequeue, Quarantine: r.quarantine, Unfair: r.cfg.Unfair},
	}
	manager.AddListener(r.Cache)
	for _, c := range enabled(r.cfg.Controllers) {
		if missing := c.missingCRDs(r); len(missing) > 0 {
			r.cfg.Logger.Warn("the API server lacks the CRDs of the "+c.name+" controller: it is off; install "+
				strings.Join(missing, " and ")+" and restart the replica to run it", "controller", c.name)
			continue
		}
		p, err := c.build(r, d)
		if err != nil {
			return err
		}
		for _, dr := range p.drainers {
			manager.AddDrainer(dr)
		}
		for _, l := range p.listeners {
			manager.AddListener(l)
		}
		r.run = append(r.run, p.run...)
		r.Running = append(r.Running, c.name)
	}
	return nil
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
	for _, run := range r.run {
		wg.Go(func() { run(work) })
	}
	wg.Go(func() { r.probeAPIServer(work) })
	wg.Go(func() { r.quarantine.Run(work) })
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
// then, with a warning that says how to get them (controller.crds). When the API server cannot be asked, the
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
