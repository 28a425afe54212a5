package fencetest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ringfire/ringfire/internal/replica"
	"github.com/ringfire/ringfire/shard"
)

// auditEvent is the part of an audit.k8s.io/v1 Event this package reads; a
// local type, so that ringfire does not depend on k8s.io/apiserver for it.
type auditEvent struct {
	Stage          string          `json:"stage"`
	Verb           string          `json:"verb"`
	UserAgent      string          `json:"userAgent"`
	ObjectRef      *objectRef      `json:"objectRef"`
	ResponseStatus *responseStatus `json:"responseStatus"`
	RequestObject  json.RawMessage `json:"requestObject"`
	ResponseObject json.RawMessage `json:"responseObject"`
	Received       time.Time       `json:"requestReceivedTimestamp"`
	StageTime      time.Time       `json:"stageTimestamp"`
}

type objectRef struct {
	Resource    string `json:"resource"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	APIGroup    string `json:"apiGroup"`
	Subresource string `json:"subresource"`
}

type responseStatus struct {
	Code int `json:"code"`
}

// body is the part of a request or response object that tells its key: its
// name and slot label, and for a Command the object it targets.
type body struct {
	Metadata struct {
		Name            string            `json:"name"`
		Namespace       string            `json:"namespace"`
		Labels          map[string]string `json:"labels"`
		ResourceVersion string            `json:"resourceVersion"`
	} `json:"metadata"`
	Target *struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	} `json:"target"`
}

// writeVerbs are the verbs that change objects.
var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// auditRecord is what readAudit finds in the audit log.
type auditRecord struct {
	writes     []write  // the replicas' writes on key-owned objects, in log order
	unresolved []string // replica writes whose slot could not be told
	// unplacedNotApplied counts the replica writes whose slot could not be
	// told either, but which cannot have landed (refused, or cut off before
	// the API server read the body, the only place a create's name is).
	unplacedNotApplied int
	events             int // ResponseComplete events read
}

// readAudit reads an audit log and returns every write a replica made on a
// key-owned object, with its slot. Writes by anyone else (the test, KWOK,
// the stand-in) are not returned, but teach the slots of the objects they
// name, for deletes whose response carries no object.
//
// Events (core and events.k8s.io) are not key-owned writes: any replica may
// record an event about any object, and the audit policy leaves them out.
func readAudit(path string, slots int) (auditRecord, error) {
	var rec auditRecord
	f, err := os.Open(path)
	if err != nil {
		return rec, err
	}
	defer f.Close()
	known := map[string]int{}          // object → slot, from bodies seen earlier
	versions := map[string][]version{} // object → the versions accepted writes produced
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return rec, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if ev.Stage != "ResponseComplete" || ev.ObjectRef == nil || !writeVerbs[ev.Verb] || ev.ObjectRef.Resource == "events" {
			continue
		}
		rec.events++
		slot, ok := slotOf(ev, slots, known)
		obj := objectName(ev)
		code := 0
		if ev.ResponseStatus != nil {
			code = ev.ResponseStatus.Code
		}
		key := objectKey(ev)
		notApplied := notApplied(ev, versions[key])
		if code >= 200 && code < 300 {
			versions[key] = append(versions[key], version{at: ev.StageTime, rv: responseVersion(ev)})
		}
		id, isReplica := strings.CutPrefix(ev.UserAgent, replica.UserAgent(""))
		if !isReplica {
			continue
		}
		w := write{
			Replica: id, Slot: slot, Verb: ev.Verb, Object: obj, Code: code,
			Received: ev.Received, Completed: ev.StageTime, NotApplied: notApplied,
		}
		if !ok {
			if !w.mayHaveLanded() {
				rec.unplacedNotApplied++
			} else {
				rec.unresolved = append(rec.unresolved, w.String())
			}
			continue
		}
		rec.writes = append(rec.writes, w)
	}
	return rec, sc.Err()
}

// version is a resourceVersion an accepted write gave an object, and when.
type version struct {
	at time.Time
	rv int64
}

// notApplied says why the event's write cannot have been applied, whatever
// its answer, or "" if nothing rules that out:
//   - a create, update or patch whose body the API server never read (no
//     requestObject at level RequestResponse: the request was cut off)
//     wrote nothing;
//   - a request whose resourceVersion is older than one an accepted write
//     had given the object before the request arrived had a precondition
//     that could not hold: resourceVersions only grow (they are etcd
//     revisions here, so they compare as numbers).
func notApplied(ev auditEvent, earlier []version) string {
	if len(ev.RequestObject) == 0 {
		if ev.Verb == "create" || ev.Verb == "update" || ev.Verb == "patch" {
			return "its body was never read"
		}
		return ""
	}
	var req body
	if json.Unmarshal(ev.RequestObject, &req) != nil {
		return ""
	}
	rv, err := strconv.ParseInt(req.Metadata.ResourceVersion, 10, 64)
	if err != nil {
		return ""
	}
	for _, v := range earlier {
		if v.at.Before(ev.Received) && v.rv > rv {
			return fmt.Sprintf("its resourceVersion %d was older than %d, written before it arrived", rv, v.rv)
		}
	}
	return ""
}

// responseVersion is the resourceVersion of the event's response object, or 0.
func responseVersion(ev auditEvent) int64 {
	var resp body
	if len(ev.ResponseObject) == 0 || json.Unmarshal(ev.ResponseObject, &resp) != nil {
		return 0
	}
	rv, _ := strconv.ParseInt(resp.Metadata.ResourceVersion, 10, 64)
	return rv
}

// slotOf tells the slot of the key an event's object belongs to: a Job's
// or a Queue's own key, a Command's target, else the object's
// ringfire.io/slot label, from its bodies or from an earlier event on it.
func slotOf(ev auditEvent, slots int, known map[string]int) (int, bool) {
	ref := ev.ObjectRef
	name := objectNameOnly(ev)
	switch {
	case ref.APIGroup == "batch.volcano.sh" && ref.Resource == "jobs" && name != "":
		return shard.SlotOf(ref.Namespace+"/"+name, slots), true
	case ref.APIGroup == "scheduling.volcano.sh" && ref.Resource == "queues" && name != "":
		return shard.SlotOf(name, slots), true
	}
	obj := objectKey(ev)
	for _, b := range decodeBodies(ev) {
		if s, ok := bodySlot(b, ref.Namespace, slots); ok {
			known[obj] = s
			return s, true
		}
	}
	s, ok := known[obj]
	return s, ok
}

// bodySlot reads the slot from an object body: a Command's target, or the
// slot label.
func bodySlot(b body, namespace string, slots int) (int, bool) {
	if b.Target != nil && b.Target.Name != "" {
		switch b.Target.Kind {
		case "Job":
			return shard.SlotOf(namespace+"/"+b.Target.Name, slots), true
		case "Queue":
			return shard.SlotOf(b.Target.Name, slots), true
		}
	}
	v, ok := b.Metadata.Labels[shard.SlotLabel]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n >= slots {
		return 0, false
	}
	return n, true
}

// decodeBodies returns the event's response and request objects that parse,
// the response first: it is what the API server stored.
func decodeBodies(ev auditEvent) []body {
	var out []body
	for _, raw := range []json.RawMessage{ev.ResponseObject, ev.RequestObject} {
		var b body
		if len(raw) > 0 && json.Unmarshal(raw, &b) == nil {
			out = append(out, b)
		}
	}
	return out
}

// objectName prints the object of an event as resource[/subresource]
// namespace/name.
func objectName(ev auditEvent) string {
	ref := ev.ObjectRef
	res := ref.Resource
	if ref.Subresource != "" {
		res += "/" + ref.Subresource
	}
	if ref.Namespace == "" {
		return res + " " + objectNameOnly(ev)
	}
	return res + " " + ref.Namespace + "/" + objectNameOnly(ev)
}

// objectKey names the object of an event, whatever subresource was
// written: group/resource namespace/name.
func objectKey(ev auditEvent) string {
	ref := ev.ObjectRef
	return ref.APIGroup + "/" + ref.Resource + " " + ref.Namespace + "/" + objectNameOnly(ev)
}

// objectNameOnly is the name of the event's object: from the request's
// path, else (a create) from its bodies.
func objectNameOnly(ev auditEvent) string {
	if ev.ObjectRef.Name != "" {
		return ev.ObjectRef.Name
	}
	for _, b := range decodeBodies(ev) {
		if b.Metadata.Name != "" {
			return b.Metadata.Name
		}
	}
	return ""
}
