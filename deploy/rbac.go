package deploy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The roles are held to what the replicas do: the end-to-end suites record the permission of
// every request their replicas send (RecordUsed, in e2e/stack), the gang scheduler's apart,
// and `go run ./hack/rbacused` compares them with the ClusterRoles (CheckRoles): every
// replica's, in ringfire/10-rbac.yaml, with what the controllers but the scheduler used; the
// scheduler's own (SchedulerDir) with what the scheduler used beyond it. A verb granted and
// never used, or used and not granted, fails `make test`.

// Permission is one verb on one resource of one API group, as a ClusterRole rule grants it and
// as the authorizer asks of a request. Resource names a subresource after a slash
// ("pods/binding").
type Permission struct {
	Group    string `json:"group"`
	Resource string `json:"resource"`
	Verb     string `json:"verb"`
}

func (p Permission) String() string {
	if p.Group == "" {
		return p.Verb + " " + p.Resource
	}
	return p.Verb + " " + p.Resource + "." + p.Group
}

func (p Permission) less(q Permission) int {
	return strings.Compare(p.Group+"\x00"+p.Resource+"\x00"+p.Verb, q.Group+"\x00"+q.Resource+"\x00"+q.Verb)
}

// Request is what the API server's authorizer sees of a request: for a resource path
// (/api/v1[/namespaces/NS]/RESOURCE[/NAME[/SUB]], /apis/GROUP/VERSION/... likewise) its verb
// and resource; for any other path (/version, /apis), that path and the method's verb.
type Request struct {
	Group, Version, Namespace, Resource, Subresource, Name string
	Verb                                                   string
	Path                                                   string // set for a non-resource request only
	// StreamingList is a watch that begins with the collection's state (sendInitialEvents):
	// an informer's list where the API server serves it that way (client-go's WatchListClient).
	StreamingList bool
}

// ParseRequest tells the authorizer's view of a request of method on u, as the API server
// derives it: a GET of a collection is list, or watch with ?watch=true; of one object, get.
func ParseRequest(method string, u *url.URL) (Request, error) {
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	var r Request
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		r.Version, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		r.Group, r.Version, parts = parts[1], parts[2], parts[3:]
	default:
		r.Path, r.Verb = u.Path, strings.ToLower(method)
		return r, nil
	}
	watchPath := parts[0] == "watch" // the old /api/v1/watch/... form
	if watchPath {
		parts = parts[1:]
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		r.Namespace, parts = parts[1], parts[2:]
	}
	if len(parts) == 0 || parts[0] == "" {
		return r, fmt.Errorf("no resource in %s", u.Path)
	}
	r.Resource = parts[0]
	if len(parts) > 1 {
		r.Name = parts[1]
	}
	if len(parts) > 2 {
		r.Subresource = parts[2]
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case watchPath || u.Query().Get("watch") == "true" || u.Query().Get("watch") == "1":
			r.Verb = "watch"
			r.StreamingList = u.Query().Get("sendInitialEvents") == "true"
		case r.Name == "":
			r.Verb = "list"
		default:
			r.Verb = "get"
		}
	case http.MethodPost:
		r.Verb = "create"
	case http.MethodPut:
		r.Verb = "update"
	case http.MethodPatch:
		r.Verb = "patch"
	case http.MethodDelete:
		r.Verb = "delete"
		if r.Name == "" {
			r.Verb = "deletecollection"
		}
	default:
		return r, fmt.Errorf("method %s of %s", method, u.Path)
	}
	return r, nil
}

// Permissions is what r needs of RBAC; none for a non-resource request. A streaming list
// needs list besides watch: it stands for the informer's list, which client-go makes a plain
// list where the API server does not serve streaming lists (older releases, the feature off).
func (r Request) Permissions() []Permission {
	if r.Path != "" {
		return nil
	}
	res := r.Resource
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	out := []Permission{{Group: r.Group, Resource: res, Verb: r.Verb}}
	if r.StreamingList {
		out = append(out, Permission{Group: r.Group, Resource: res, Verb: "list"})
	}
	return out
}

// Granted is every permission the ClusterRole of ringfire/10-rbac.yaml (every replica's)
// grants, sorted, one per group, resource and verb.
func Granted() ([]Permission, error) { return grantedBy("ringfire") }

// SchedulerGranted is every permission the gang scheduler's ClusterRole (SchedulerDir) grants
// besides, sorted: bound only where the scheduler runs.
func SchedulerGranted() ([]Permission, error) { return grantedBy(SchedulerDir) }

// grantedBy is what the first ClusterRole of dir grants.
func grantedBy(dir string) ([]Permission, error) {
	objs, err := Objects(dir)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		var role rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
			return nil, fmt.Errorf("ClusterRole %s: %w", o.GetName(), err)
		}
		return grantsOf(role.Rules), nil
	}
	return nil, fmt.Errorf("%s has no ClusterRole", dir)
}

func grantsOf(rules []rbacv1.PolicyRule) []Permission {
	var out []Permission
	for _, rule := range rules {
		for _, g := range rule.APIGroups {
			for _, r := range rule.Resources {
				for _, v := range rule.Verbs {
					out = append(out, Permission{Group: g, Resource: r, Verb: v})
				}
			}
		}
	}
	return sortedSet(out)
}

func sortedSet(ps []Permission) []Permission {
	out := slices.Clone(ps)
	slices.SortFunc(out, Permission.less)
	return slices.Compact(out)
}

// RoleCheck is how a role and what was used compare.
type RoleCheck struct {
	Unused    []Permission // granted, never used, not on the allow-list
	Ungranted []Permission // used and not granted
	Allowed   []Permission // granted, never used, on the allow-list
}

// OK reports whether the role grants exactly what was used, but the allow-list.
func (c RoleCheck) OK() bool { return len(c.Unused) == 0 && len(c.Ungranted) == 0 }

// CheckRole compares what the role grants with what was used. allowed lists the permissions
// needed on paths the suites do not take, each with why (UnexercisedGrants).
func CheckRole(granted, used []Permission, allowed map[Permission]string) RoleCheck {
	var c RoleCheck
	for _, p := range sortedSet(granted) {
		switch {
		case slices.Contains(used, p):
		case allowed[p] != "":
			c.Allowed = append(c.Allowed, p)
		default:
			c.Unused = append(c.Unused, p)
		}
	}
	for _, p := range sortedSet(used) {
		if !slices.Contains(granted, p) {
			c.Ungranted = append(c.Ungranted, p)
		}
	}
	return c
}

// RoleChecks are the two roles' checks: every replica's, and the gang scheduler's.
type RoleChecks struct {
	Replica, Scheduler RoleCheck
	// SchedulerOnly are grants of every replica's role that only the scheduler used: they
	// may belong in the scheduler's role (a suite that takes the replicas' path may be
	// missing).
	SchedulerOnly []Permission
}

// OK reports whether both roles grant exactly what was used, but the allow-list.
func (c RoleChecks) OK() bool { return c.Replica.OK() && c.Scheduler.OK() }

// CheckRoles compares the roles with what was used: replica, every replica's role, must grant
// all that the controllers but the scheduler used (usedReplicas); scheduler, granted besides
// where the scheduler runs, what the scheduler used beyond replica (usedScheduler). A grant of
// replica used by the scheduler alone counts as used (SchedulerOnly names it); one of scheduler
// used by the other controllers is not granted to them.
func CheckRoles(replica, scheduler, usedReplicas, usedScheduler []Permission, allowed map[Permission]string) RoleChecks {
	var beyond, inReplica []Permission
	for _, p := range usedScheduler {
		if slices.Contains(replica, p) {
			inReplica = append(inReplica, p)
		} else {
			beyond = append(beyond, p)
		}
	}
	c := RoleChecks{
		Replica:   CheckRole(replica, append(slices.Clone(usedReplicas), inReplica...), allowed),
		Scheduler: CheckRole(scheduler, beyond, allowed),
	}
	for _, p := range sortedSet(inReplica) {
		if !slices.Contains(usedReplicas, p) {
			c.SchedulerOnly = append(c.SchedulerOnly, p)
		}
	}
	return c
}

// SchedulerUse ends the name WriteUsed gives the file of what the gang scheduler used
// (<pid>.scheduler.json); the other files are the other controllers'.
const SchedulerUse = ".scheduler"

// WriteUsed writes used into dir as <name>.json (a test binary's pid), replacing what that
// file held: a process calls it again with all it has used so far.
func WriteUsed(dir, name string, used []Permission) error {
	data, err := json.MarshalIndent(sortedSet(used), "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".used-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, name+".json"))
}

// ReadUsed is the union of the sets WriteUsed wrote into dir: of the controllers but the
// scheduler, and of the scheduler (the files named with SchedulerUse); and the files read.
func ReadUsed(dir string) (replicas, scheduler []Permission, files []string, err error) {
	files, err = filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, nil, nil, err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, nil, err
		}
		var ps []Permission
		if err := json.Unmarshal(data, &ps); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", f, err)
		}
		if strings.HasSuffix(f, SchedulerUse+".json") {
			scheduler = append(scheduler, ps...)
		} else {
			replicas = append(replicas, ps...)
		}
	}
	return sortedSet(replicas), sortedSet(scheduler), files, nil
}
