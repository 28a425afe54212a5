package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ringfire/ringfire/internal/wallstep"
	"github.com/ringfire/ringfire/membership"
)

// testWallStep returns the membership clock that the test-only hook
// wallstep.Env asks for, or nil (time.Now) when it is unset: set to a
// duration, it steps the wall reading of the clock by that much when the
// process gets SIGUSR1, as NTP or an operator stepping the machine's clock
// would. It is not a flag (docs/e2e.md): the end-to-end tests use it to show
// that the fence does not depend on the wall clock, since the system clock
// of a shared test machine cannot be stepped for one process. The step waits
// for SIGUSR1 until ctx ends.
func testWallStep(ctx context.Context, log hclog.Logger) (membership.Clock, error) {
	v := os.Getenv(wallstep.Env)
	if v == "" {
		return nil, nil
	}
	step, err := time.ParseDuration(v)
	if err != nil {
		return nil, fmt.Errorf("%s=%q, a test-only setting: %w", wallstep.Env, v, err)
	}
	clock, err := wallstep.New()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", wallstep.Env, err)
	}
	// Registered before this returns, so that a SIGUSR1 sent once the
	// replica is up finds it, and not the default action (exit).
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	go func() {
		defer signal.Stop(sig)
		select {
		case <-ctx.Done():
		case <-sig:
			clock.Set(step)
			log.Warn("test only: the membership clock's wall reading stepped", "env", wallstep.Env, "step", step)
		}
	}()
	log.Warn("test only: the membership clock's wall reading will step on SIGUSR1", "env", wallstep.Env, "step", step)
	return clock, nil
}
