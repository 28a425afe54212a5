package kit

import (
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/shard"
)

// Config is what every controller is given beside settings of its own: its clients, the
// ring's view of the slots held, the clock, where it logs and registers its metrics. Each
// controller's Config embeds it, and the replica fills it once for all of them.
type Config struct {
	Kube kubernetes.Interface
	// Volcano reaches the Volcano API; a controller of Kubernetes kinds only (batchjob) has
	// no use for it.
	Volcano vcclient.Interface
	// Ownership is the ring's view of held slots (the shard.Manager); Valid, when set, reports
	// whether this replica's membership is still valid right now, checked before every write.
	Ownership shard.Ownership
	Valid     func() error
	// Clock tells the time statuses, deadlines, schedules and paces are measured against;
	// tests set a fake one. Nil: the real clock (ClockOr).
	Clock clock.PassiveClock
	// Logger receives the controller's logs (nil discards them); Registerer, when set, its
	// metrics.
	Logger     hclog.Logger
	Registerer prometheus.Registerer
}

// ClockOr is c's Clock, or the real clock when it has none.
func (c Config) ClockOr() clock.PassiveClock {
	if c.Clock == nil {
		return clock.RealClock{}
	}
	return c.Clock
}

// Validate reports the dependencies every controller needs that c lacks: the Kubernetes
// client and the ring's Ownership. It changes nothing. A nil Clock (the real clock), Logger
// (no logs), Registerer (no metrics) or Valid (no check beside the Ownership's) is valid;
// each controller's Validate adds the clients of its own (Volcano).
func (c Config) Validate() error {
	var errs []error
	if c.Kube == nil {
		errs = append(errs, errors.New("a Kubernetes client (Kube) is required"))
	}
	if c.Ownership == nil {
		errs = append(errs, errors.New("the ring's Ownership is required"))
	}
	return errors.Join(errs...)
}

// LoggerOr is c's Logger, or one that discards when it has none.
func (c Config) LoggerOr() hclog.Logger {
	if c.Logger == nil {
		return hclog.NewNullLogger()
	}
	return c.Logger
}

// Work configures the per-key dispatcher of a controller that reconciles keys; such a
// controller's Config embeds it.
type Work struct {
	// Workers reconcile keys in parallel, at least one; one key is never in two at once.
	Workers int
	// MaxRequeue is how often a request failing for good is retried before it is given up
	// (Volcano's max-requeue-num): DefaultMaxRequeue in DefaultWork; 0 gives up at the first
	// failure, RetryForever never. Errors that waiting cures are retried for ever and never
	// count (Classify).
	MaxRequeue int
	// Quarantine, when set, keeps poison keys from running (shard.Quarantine).
	Quarantine *shard.Quarantine
	// Unfair serves ready keys in the order they came rather than fairly between
	// namespaces (shard.DispatcherConfig.Unfair): for comparisons only.
	Unfair bool
}

// DefaultWork is the Work of a controller with the given workers and Volcano's requeue limit.
func DefaultWork(workers int) Work { return Work{Workers: workers, MaxRequeue: DefaultMaxRequeue} }

// Validate reports every field of w that cannot work. It changes nothing.
func (w Work) Validate() error {
	var errs []error
	if w.Workers < 1 {
		errs = append(errs, fmt.Errorf("workers %d: at least 1", w.Workers))
	}
	if w.MaxRequeue < RetryForever {
		errs = append(errs, fmt.Errorf("max requeue %d: %d retries for ever, 0 or more bounds the retries", w.MaxRequeue, RetryForever))
	}
	return errors.Join(errs...)
}
