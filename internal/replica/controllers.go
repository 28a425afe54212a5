package replica

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	flowv1alpha1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"

	"github.com/ringfire/ringfire/controllers/batchjob"
	"github.com/ringfire/ringfire/controllers/cronjob"
	"github.com/ringfire/ringfire/controllers/flow"
	"github.com/ringfire/ringfire/controllers/job"
	"github.com/ringfire/ringfire/controllers/kit"
	"github.com/ringfire/ringfire/controllers/podgroup"
	"github.com/ringfire/ringfire/controllers/queue"
	"github.com/ringfire/ringfire/controllers/scheduler"
	"github.com/ringfire/ringfire/shard"
)

// The names of the controllers, as `--controllers` takes them.
const (
	JobController       = "job"
	QueueController     = "queue"
	PodGroupController  = "podgroup"
	CronJobController   = "cronjob"
	JobFlowController   = "jobflow"
	BatchJobController  = "batchjob"
	SchedulerController = "scheduler"
)

// crdSet is a group version and the resources of it a controller needs.
type crdSet struct {
	groupVersion string
	resources    []string
	// install says where the CRDs are, for the warning of a cluster
	// without them.
	install string
}

// controller describes one entry of the table: every controller a replica
// can run is described here once, and New, Run and `--controllers` read it.
type controller struct {
	name string
	// required controllers always run: the replica's shared cache is built
	// around them (see requiredWhy).
	required bool
	// byDefault controllers run unless `--controllers` leaves them out.
	byDefault bool
	// crds the controller needs. On an API server that serves none of
	// them, or not all, the controller turns itself off with a warning: its
	// informers would never list, and the replica's cache would wait for
	// them for ever.
	crds []crdSet
	// build makes the controller from the replica's shared parts, sets
	// its field of Replica, and says what it starts.
	build func(r *Replica, d deps) (parts, error)
}

// deps are what a controller is built from: the replica's clients and its
// configuration, with the choices New made for the whole replica.
type deps struct {
	cfg        Config
	api        clients
	manager    *shard.Manager
	schedulers []string
	// kit and work are what every controller is given: the clients, the ring's view, the
	// logger and registerer, and the workers, requeue limit and quarantine of the controllers
	// of workloads (the Queue and PodGroup controllers keep worker counts of their own).
	kit  kit.Config
	work kit.Work
}

// parts are what one controller adds to the replica: its goroutines, the
// work the slot manager drains before it hands a slot over, and the
// listeners of gained and lost slots.
type parts struct {
	run       []func(context.Context)
	drainers  []shard.Drainer
	listeners []shard.Listener
}

// requiredWhy says why the required controllers cannot be turned off.
const requiredWhy = "the Job, Queue and PodGroup controllers always run together: the replica's cache is built around them " +
	"(it tells the Job controller which slots are ready, and the Job controller waits on the Queue states the Queue controller keeps)"

// controllerTable is every controller of a replica, in the order they are
// built and registered with the slot manager.
var controllerTable = []controller{
	{
		name: JobController, required: true, byDefault: true,
		build: func(r *Replica, d deps) (parts, error) {
			var err error
			c := job.DefaultConfig()
			c.Config, c.Work, c.Cache = d.kit, d.work, r.Cache
			c.Observe, c.SchedulerName, c.StatusCoalesce = d.cfg.Observe, d.cfg.SchedulerName, d.cfg.StatusCoalesce
			r.Jobs, err = job.New(c)
			if err != nil {
				return parts{}, err
			}
			// The cache is the Job controller's listener for gains: it gains a
			// slot's Jobs first, then tells the controller (SlotsReady). The
			// controller hears of losses itself, to forget those Jobs.
			return parts{run: []func(context.Context){r.Jobs.Run}, drainers: []shard.Drainer{r.Jobs.Drainer()}, listeners: []shard.Listener{r.Jobs}}, nil
		},
	},
	{
		name: QueueController, required: true, byDefault: true,
		build: func(r *Replica, d deps) (parts, error) {
			var err error
			// The Queue and PodGroup controllers keep their own worker
			// counts: Config.Workers is for the controllers of workloads.
			c := queue.DefaultConfig()
			c.Config, c.MaxRequeue = d.kit, d.work.MaxRequeue
			c.Shared = &queue.Informers{Queues: r.Cache.Queues(), Commands: r.Cache.Commands(), PodGroups: r.Cache.QueuePodGroups()}
			r.Queues, err = queue.New(c)
			if err != nil {
				return parts{}, err
			}
			return parts{run: []func(context.Context){r.Queues.Run}, drainers: []shard.Drainer{r.Queues.Drainer()}, listeners: []shard.Listener{r.Queues}}, nil
		},
	},
	{
		name: PodGroupController, required: true, byDefault: true,
		build: func(r *Replica, d deps) (parts, error) {
			var err error
			c := podgroup.DefaultConfig()
			c.Config, c.MaxRequeue, c.Quarantine, c.SchedulerNames = d.kit, d.work.MaxRequeue, d.work.Quarantine, d.schedulers
			r.PodGroups, err = podgroup.New(c)
			if err != nil {
				return parts{}, err
			}
			return parts{run: []func(context.Context){r.PodGroups.Run}, drainers: []shard.Drainer{r.PodGroups.Drainer()}, listeners: []shard.Listener{r.PodGroups}}, nil
		},
	},
	{
		name: JobFlowController, byDefault: true,
		crds: []crdSet{{
			groupVersion: flowv1alpha1.SchemeGroupVersion.String(), resources: []string{"jobflows", "jobtemplates"},
			install: "deploy/crds/flow.volcano.sh_jobflows.yaml and flow.volcano.sh_jobtemplates.yaml",
		}},
		build: func(r *Replica, d deps) (parts, error) {
			fcfg := flow.DefaultConfig()
			fcfg.Config, fcfg.Work, fcfg.StatusCoalesce = d.kit, d.work, d.cfg.StatusCoalesce
			fcfg.JobFlows, fcfg.JobTemplates, fcfg.Jobs = r.Cache.JobFlows(), r.Cache.JobTemplates(), r.Cache.Jobs()
			fcfg.Expectations = r.Cache.Expectations()
			var err error
			if r.JobFlows, err = flow.NewFlows(fcfg); err != nil {
				return parts{}, err
			}
			if r.Templates, err = flow.NewTemplates(fcfg); err != nil {
				return parts{}, err
			}
			return parts{
				run:       []func(context.Context){r.JobFlows.Run, r.Templates.Run},
				drainers:  []shard.Drainer{r.JobFlows.Drainer(), r.Templates.Drainer()},
				listeners: []shard.Listener{r.JobFlows, r.Templates},
			}, nil
		},
	},
	{
		name: CronJobController, byDefault: true,
		crds: []crdSet{{
			groupVersion: batchv1alpha1.SchemeGroupVersion.String(), resources: []string{"cronjobs"},
			install: "deploy/crds/batch.volcano.sh_cronjobs.yaml",
		}},
		build: func(r *Replica, d deps) (parts, error) {
			var err error
			c := cronjob.DefaultConfig()
			c.Config, c.Work, c.CronJobs, c.Jobs = d.kit, d.work, r.Cache.CronJobs(), r.Cache.Jobs()
			r.CronJobs, err = cronjob.New(c)
			if err != nil {
				return parts{}, err
			}
			return parts{run: []func(context.Context){r.CronJobs.Run}, drainers: []shard.Drainer{r.CronJobs.Drainer()}, listeners: []shard.Listener{r.CronJobs}}, nil
		},
	},
	{
		name: BatchJobController, byDefault: true,
		build: func(r *Replica, d deps) (parts, error) {
			var err error
			c := batchjob.DefaultConfig()
			c.Config, c.Work, c.Cache = d.kit, d.work, r.Cache
			r.BatchJobs, err = batchjob.New(c)
			if err != nil {
				return parts{}, err
			}
			return parts{run: []func(context.Context){r.BatchJobs.Run}, drainers: []shard.Drainer{r.BatchJobs.Drainer()}, listeners: []shard.Listener{r.BatchJobs}}, nil
		},
	},
	{
		// The gang scheduler is a ring singleton, off unless asked for, so
		// that it never fights a real vc-scheduler.
		name: SchedulerController,
		build: func(r *Replica, d deps) (parts, error) {
			var err error
			c := scheduler.DefaultConfig()
			c.Config, c.SchedulerNames, c.PodEvents = d.kit, d.schedulers, d.cfg.SchedulerPodEvents
			r.Scheduler, err = scheduler.New(c)
			if err != nil {
				return parts{}, err
			}
			return parts{run: []func(context.Context){r.Scheduler.Run}, drainers: []shard.Drainer{r.Scheduler}, listeners: []shard.Listener{r.Scheduler}}, nil
		},
	},
}

// KnownControllers are the names of every controller of the table, in its order.
func KnownControllers() []string {
	names := make([]string, 0, len(controllerTable))
	for _, c := range controllerTable {
		names = append(names, c.name)
	}
	return names
}

// DefaultControllers are the controllers a replica runs unless told
// otherwise: all but the gang scheduler.
func DefaultControllers() []string {
	var names []string
	for _, c := range controllerTable {
		if c.byDefault {
			names = append(names, c.name)
		}
	}
	return names
}

// ParseControllers splits a comma-separated list of controller names, as
// `--controllers` takes it; ValidateControllers checks the names.
func ParseControllers(list string) []string {
	var names []string
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name != "" {
			names = append(names, name)
		}
	}
	return names
}

// ValidateControllers checks a set of controller names: each is in the
// table, none is named twice, and the required ones are all there.
func ValidateControllers(names []string) error {
	seen := map[string]bool{}
	var unknown, twice []string
	for _, name := range names {
		if lookupController(name) == nil {
			unknown = append(unknown, fmt.Sprintf("%q", name))
		} else if seen[name] {
			twice = append(twice, name)
		}
		seen[name] = true
	}
	if len(unknown) > 0 {
		return fmt.Errorf("unknown controller %s (known: %s)", strings.Join(unknown, ", "), strings.Join(KnownControllers(), ", "))
	}
	if len(twice) > 0 {
		return fmt.Errorf("controller %s named more than once", strings.Join(twice, ", "))
	}
	var missing []string
	for _, c := range controllerTable {
		if c.required && !seen[c.name] {
			missing = append(missing, c.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s left out: %s, and cannot be turned off", strings.Join(missing, ", "), requiredWhy)
	}
	return nil
}

func lookupController(name string) *controller {
	for i := range controllerTable {
		if controllerTable[i].name == name {
			return &controllerTable[i]
		}
	}
	return nil
}

// enabled are the entries of the table named in names, in the table's order.
func enabled(names []string) []controller {
	var on []controller
	for _, c := range controllerTable {
		if slices.Contains(names, c.name) {
			on = append(on, c)
		}
	}
	return on
}

// missingCRDs returns the CRDs of c that the API server does not serve, as
// words for a warning; nil when it serves them all or cannot tell.
func (c controller) missingCRDs(r *Replica) []string {
	var missing []string
	for _, set := range c.crds {
		if !serves(r.cfg.Kube, r.cfg.Logger, set.groupVersion, set.resources...) {
			missing = append(missing, set.install)
		}
	}
	sort.Strings(missing)
	return missing
}
