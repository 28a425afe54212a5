package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/ringfire/ringfire/e2e/procs"
)

// failoverDiag keeps, for a failover, what splits its time: kube-apiserver's
// and each survivor's /metrics just before the kill and once the probes
// have their pods (request latencies by verb and resource, the watch
// cache's consistent reads, the replicas' client-side waits), and a CPU
// profile of kube-apiserver over the first RINGFIRE_SCALE_FAILOVER_PROFILE
// after the kill. It is off when that is 0 (the default), and writes under
// the system's log directory, each file named for the round (failover1-,
// failover2-, ...). Call it just before the kill; call the function it
// returns once the probes are in.
func (e *scaleEnv) failoverDiag(ctx context.Context, survivors []*procs.Replica, round int) (done func()) {
	if e.sc.profile <= 0 {
		return func() {}
	}
	prefix := fmt.Sprintf("failover%d-", round+1)
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(e.sysLogs, prefix+name), data, 0o644); err != nil {
			fmt.Printf("failover diagnostics: %v\n", err)
		}
	}
	snapshot := func(suffix string) {
		raw := e.kube.CoreV1().RESTClient().Get().AbsPath("/metrics")
		if data, err := raw.DoRaw(ctx); err == nil {
			write("kube-apiserver-"+suffix+".prom", data)
		} else {
			fmt.Printf("failover diagnostics: kube-apiserver /metrics: %v\n", err)
		}
		for _, r := range survivors {
			if body, code, err := r.Get(ctx, "/metrics"); err == nil && code == 200 {
				write(r.ID+"-"+suffix+".prom", []byte(body))
			} else {
				fmt.Printf("failover diagnostics: %s /metrics: %d %v\n", r.ID, code, err)
			}
		}
	}
	snapshot("before")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pctx, cancel := context.WithTimeout(ctx, e.sc.profile+time.Minute)
		defer cancel()
		data, err := e.kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(int(e.sc.profile.Seconds()))).DoRaw(pctx)
		if err != nil {
			fmt.Printf("failover diagnostics: kube-apiserver profile: %v\n", err)
			return
		}
		write("kube-apiserver.pprof", data)
	}()
	return func() {
		snapshot("after")
		wg.Wait()
	}
}
