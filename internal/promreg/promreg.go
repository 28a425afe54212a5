// Package promreg registers Prometheus collectors all or none, for every
// layer of ringfire (membership, shard, cache, controllers, the command).
package promreg

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers every collector on reg, or none: when one fails, those
// registered before it are unregistered again and the error names the one
// that failed. A nil reg registers nothing.
func Register(reg prometheus.Registerer, collectors ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for i, c := range collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range collectors[:i] {
				reg.Unregister(done)
			}
			return fmt.Errorf("register metric %d of %d: %w", i+1, len(collectors), err)
		}
	}
	return nil
}
