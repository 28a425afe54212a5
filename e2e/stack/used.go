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
// stacks.
var used = struct {
	sync.Mutex
	set map[deploy.Permission]bool
}{set: map[deploy.Permission]bool{}}

// recordUsed notes the permission req asks for; a request that is not a resource's (discovery,
// /version) needs none of the role.
func recordUsed(req *http.Request) {
	r, err := deploy.ParseRequest(req.Method, req.URL)
	if err != nil {
		return
	}
	used.Lock()
	for _, p := range r.Permissions() {
		used.set[p] = true
	}
	used.Unlock()
}

// writeUsed writes what this process's replicas used so far into $RINGFIRE_RBAC_USED_DIR.
func writeUsed(t testing.TB) {
	dir := os.Getenv(UsedDirEnv)
	if dir == "" {
		return
	}
	used.Lock()
	ps := make([]deploy.Permission, 0, len(used.set))
	for p := range used.set {
		ps = append(ps, p)
	}
	used.Unlock()
	if err := deploy.WriteUsed(dir, strconv.Itoa(os.Getpid()), ps); err != nil {
		t.Errorf("write the permissions the replicas used: %v", err)
	}
}
