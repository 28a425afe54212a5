package stack

import (
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/ringfire/ringfire/deploy"
)

// UsedDirEnv names the directory into which each test binary writes the permissions its
// replicas' requests asked for (<pid>.json, deploy.WriteUsed), for `go run ./hack/rbacused`
// to compare with the ClusterRole after every suite has run. Unset, nothing is written.
const UsedDirEnv = "RINGFIRE_RBAC_USED_DIR"

// used is every permission the requests of this process's replicas asked for, across all its
// stacks; usedScheduler those of the gang schedulers a test runs beside them (SchedulerConfig),
// checked against the scheduler's own role.
var used, usedScheduler = newUseSet(), newUseSet()

type useSet struct {
	sync.Mutex
	set map[deploy.Permission]bool
}

func newUseSet() *useSet { return &useSet{set: map[deploy.Permission]bool{}} }

// recordUsed notes the permission req asks for, as the scheduler's or the other controllers';
// a request that is not a resource's (discovery, /version) needs none of the role.
func recordUsed(req *http.Request, scheduler bool) {
	r, err := deploy.ParseRequest(req.Method, req.URL)
	if err != nil {
		return
	}
	u := used
	if scheduler {
		u = usedScheduler
	}
	u.Lock()
	for _, p := range r.Permissions() {
		u.set[p] = true
	}
	u.Unlock()
}

// writeUsed writes what this process's replicas and schedulers used so far into
// $RINGFIRE_RBAC_USED_DIR: <pid>.json, and <pid>.scheduler.json (deploy.SchedulerUse).
func writeUsed(t testing.TB) {
	dir := os.Getenv(UsedDirEnv)
	if dir == "" {
		return
	}
	for _, w := range []struct {
		name string
		u    *useSet
	}{{strconv.Itoa(os.Getpid()), used}, {strconv.Itoa(os.Getpid()) + deploy.SchedulerUse, usedScheduler}} {
		w.u.Lock()
		ps := make([]deploy.Permission, 0, len(w.u.set))
		for p := range w.u.set {
			ps = append(ps, p)
		}
		w.u.Unlock()
		if len(ps) == 0 && w.u == usedScheduler {
			continue
		}
		if err := deploy.WriteUsed(dir, w.name, ps); err != nil {
			t.Errorf("write the permissions the replicas used: %v", err)
		}
	}
}
