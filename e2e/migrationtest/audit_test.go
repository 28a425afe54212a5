package migrationtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// event is the part of an audit.k8s.io/v1 Event the test reads.
type event struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	ResponseObject *body     `json:"responseObject"`
	StageTime      time.Time `json:"stageTimestamp"`
}

// body is what the test reads of an object in a response.
type body struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name            string            `json:"name"`
		UID             types.UID         `json:"uid"`
		Annotations     map[string]string `json:"annotations"`
		OwnerReferences []struct {
			Kind       string `json:"kind"`
			Name       string `json:"name"`
			Controller *bool  `json:"controller"`
		} `json:"ownerReferences"`
	} `json:"metadata"`
	// Status is a Job's status, or a Status object's string: read by jobPhase.
	Status json.RawMessage `json:"status"`
}

// jobPhase is the phase of a Job in a response, or "".
func (b *body) jobPhase() batch.JobPhase {
	if b == nil || b.Kind != "Job" {
		return ""
	}
	var st struct {
		State struct {
			Phase batch.JobPhase `json:"phase"`
		} `json:"state"`
	}
	if err := json.Unmarshal(b.Status, &st); err != nil {
		return ""
	}
	return st.State.Phase
}

// readAudit reads the API server's audit log: every write that completed, in order.
func readAudit(t *testing.T, path string) []event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if ev.Stage == "ResponseComplete" && ev.ObjectRef != nil && ev.ObjectRef.Namespace == ns && ev.ResponseStatus != nil {
			out = append(out, ev)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// actor names who sent a request, by its user agent: Volcano's controller manager,
// a ringfire replica, or someone else (the test, KWOK, vc-scheduler, ...).
func actor(ev event) string {
	switch ua := ev.UserAgent; {
	case strings.HasPrefix(ua, "vc-controller-manager"):
		return "vc-controller-manager"
	case strings.HasPrefix(ua, "ringfire/"):
		return "ringfire"
	case strings.HasPrefix(ua, "vc-scheduler"):
		return "vc-scheduler"
	default:
		return "other"
	}
}

// ownedKinds are the kinds a Job controls.
var ownedKinds = map[string]bool{"pods": true, "podgroups": true, "services": true, "configmaps": true, "networkpolicies": true, "secrets": true}

// checkAudit checks what the control plane recorded over the whole test:
//   - no pod was created twice: one accepted create per pod name and Job version;
//   - no create of ringfire's was refused because the object existed (adoption let it see
//     every object vc-controller-manager had made);
//   - nothing a Job of a kind that keeps its pods owned was deleted before the step that
//     brought the Job to its final phase, whoever made it and whoever deleted it;
//   - while ringfire ran, vc-controller-manager (with the controllers that stay) wrote
//     nothing on Jobs or what they own; after ringfire stopped, ringfire wrote nothing.
func (w *world) checkAudit(evs []event, jobs []job, before map[types.UID]object, switchAt, backAt time.Time) {
	t := w.t
	kindOf := map[string]kind{}
	for _, j := range jobs {
		kindOf[j.name] = j.kind
	}
	type creation struct {
		uid   types.UID
		actor string
	}
	creates := map[string][]creation{} // pod name and job version → accepted creates
	ownerOf := map[string]string{}     // kind/name → controlling Job
	phase := map[string]batch.JobPhase{}
	// writes holds, per Job, the index in evs and the phase of every accepted write of it.
	type phaseWrite struct {
		at    int
		phase batch.JobPhase
	}
	writes := map[string][]phaseWrite{}
	for i, ev := range evs {
		if ev.ObjectRef.Resource == "jobs" && ev.ResponseStatus.Code < 300 {
			if p := ev.ResponseObject.jobPhase(); p != "" {
				writes[ev.ObjectRef.Name] = append(writes[ev.ObjectRef.Name], phaseWrite{i, p})
			}
		}
	}
	// nextPhase is the phase the next write of Job name after evs[i] gave it.
	nextPhase := func(name string, i int) batch.JobPhase {
		for _, w := range writes[name] {
			if w.at > i {
				return w.phase
			}
		}
		return ""
	}
	count := map[string]int{} // "actor verb kind" → accepted writes
	var refused, early, strays []string
	for i, ev := range evs {
		ref, code, who := ev.ObjectRef, ev.ResponseStatus.Code, actor(ev)
		ok := code >= 200 && code < 300
		if ref.Resource == "jobs" && ok {
			if p := ev.ResponseObject.jobPhase(); p != "" {
				phase[ref.Name] = p
			}
		}
		if !ownedKinds[ref.Resource] && ref.Resource != "jobs" && ref.Resource != "commands" {
			continue
		}
		if ok && ev.Verb != "get" {
			count[who+" "+ev.Verb+" "+ref.Resource]++
		}
		during := ev.StageTime.After(switchAt) && ev.StageTime.Before(backAt)
		if ok && during && who == "vc-controller-manager" {
			strays = append(strays, fmt.Sprintf("vc-controller-manager %s %s/%s while ringfire ran", ev.Verb, ref.Resource, ref.Name))
		}
		if ok && ev.StageTime.After(backAt) && who == "ringfire" {
			strays = append(strays, fmt.Sprintf("ringfire %s %s/%s after it stopped", ev.Verb, ref.Resource, ref.Name))
		}
		if !ownedKinds[ref.Resource] || ref.Subresource != "" {
			continue
		}
		key := ref.Resource + "/" + ref.Name
		switch ev.Verb {
		case "create":
			if code == 409 && who == "ringfire" {
				refused = append(refused, key)
			}
			if !ok || ev.ResponseObject == nil {
				continue
			}
			m := ev.ResponseObject.Metadata
			for _, o := range m.OwnerReferences {
				if o.Controller != nil && *o.Controller && o.Kind == "Job" {
					ownerOf[key] = o.Name
				}
			}
			if ref.Resource == "pods" {
				k := ref.Name + " version " + m.Annotations[batch.JobVersion]
				creates[k] = append(creates[k], creation{uid: m.UID, actor: who})
			}
		case "delete":
			if !ok {
				continue
			}
			// The step that ends a Job may clean up before it writes the final phase (ringfire
			// deletes the PodGroup and the plugins' objects first; Volcano writes first).
			owner := ownerOf[key]
			if k, known := kindOf[owner]; known && k.keepsPods && phase[owner] != k.final && nextPhase(owner, i) != k.final {
				early = append(early, fmt.Sprintf("%s (of %s, %s) deleted by %s while the Job was %s", key, owner, k.name, who, phase[owner]))
			}
		}
	}
	var twice []string
	for k, cs := range creates {
		if len(cs) > 1 {
			twice = append(twice, fmt.Sprintf("pod %s created %d times: %v", k, len(cs), cs))
		}
	}
	sort.Strings(twice)
	for _, problems := range []struct {
		what  string
		items []string
	}{
		{"pods created twice", twice},
		{"creates of ringfire's refused as AlreadyExists", refused},
		{"objects deleted before their Job was done with them", early},
		{"writes by a controller that should have been idle", strays},
	} {
		if len(problems.items) > 0 {
			t.Errorf("%s (%d):\n%s", problems.what, len(problems.items), strings.Join(firstN(problems.items, 30), "\n"))
		}
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var lines []string
	for _, k := range keys {
		lines = append(lines, fmt.Sprintf("  %-50s %d", k, count[k]))
	}
	t.Logf("accepted writes in the namespace, from the audit log (%d pods with one create each):\n%s", len(creates), strings.Join(lines, "\n"))

	// Every pod vc-controller-manager made for a Job that keeps its pods ran to the end.
	pods := w.snapshot()
	for uid, o := range before {
		k := kindOf[o.job]
		if o.kind != "pods" || !k.keepsPods {
			continue
		}
		if _, ok := pods[uid]; !ok {
			t.Errorf("pod %s (of %s), made by vc-controller-manager, is gone", o.name, o.job)
		}
	}
}

func firstN(items []string, n int) []string {
	if len(items) > n {
		return append(items[:n:n], fmt.Sprintf("... and %d more", len(items)-n))
	}
	return items
}
