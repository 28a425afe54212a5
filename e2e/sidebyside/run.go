package sidebyside

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
)

// poll is how often a scenario looks at what the recorder saw.
const poll = 200 * time.Millisecond

// Run plays every scenario on env at the same time, each in its own namespace, and returns
// what was recorded of each, in the order given. A scenario the harness could not play (an
// object refused, say) fails the test and shows as an "error" row.
func Run(t testing.TB, env *Env, scenarios []*Scenario) []*Result {
	t.Helper()
	rec := StartRecorder(t, env)
	dc, err := discovery.NewDiscoveryClientForConfig(env.Cluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := &player{env: env, rec: rec, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), t: t}
	results := make([]*Result, len(scenarios))
	var wg sync.WaitGroup
	for i, sc := range scenarios {
		wg.Go(func() { results[i] = p.play(sc) })
	}
	wg.Wait()
	return results
}

// player plays scenarios on one side.
type player struct {
	env    *Env
	rec    *Recorder
	mapper meta.RESTMapper
	t      testing.TB
}

// play runs one scenario to its end (settled, or its timeout) and returns its record.
func (p *player) play(sc *Scenario) *Result {
	ctx, cancel := context.WithTimeout(context.Background(), sc.Timeout.Duration+time.Minute)
	defer cancel()
	ns := sc.Namespace()
	fail := func(err error) *Result {
		p.t.Errorf("%s: scenario %s: %v", p.env.Name, sc.Name, err)
		return &Result{Scenario: sc.Name, Side: p.env.Name, Rows: []Row{{"error", err.Error()}}}
	}
	if _, err := p.env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return fail(err)
	}
	// Pods cannot be created in the namespace before its default ServiceAccount exists: wait
	// for it, so that neither side spends its first tries (and Events) on that.
	if err := wait.PollUntilContextTimeout(ctx, poll, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := p.env.Kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return fail(fmt.Errorf("no default ServiceAccount in %s: %w", ns, err))
	}
	for _, o := range sc.Objects {
		if err := p.create(ctx, ns, o.DeepCopy()); err != nil {
			return fail(err)
		}
	}
	deadline := time.Now().Add(sc.Timeout.Duration)
	step := 0
	since := p.phaseCounts(ns) // what the step's When looks at: phases seen after these
	for time.Now().Before(deadline) {
		if step < len(sc.Steps) {
			if p.holds(ns, sc.Steps[step].When, since) {
				if err := p.act(ctx, ns, sc.Steps[step]); err != nil {
					return fail(fmt.Errorf("step %d: %w", step+1, err))
				}
				step++
				since = p.phaseCounts(ns)
				continue
			}
		} else {
			settled := false
			p.rec.view(ns, func(r *nsRecord) { settled = r.settled(sc.Settle.Duration) })
			if settled {
				return p.result(ctx, sc, "settled")
			}
		}
		time.Sleep(poll)
	}
	outcome := fmt.Sprintf("timed out after %v", sc.Timeout.Duration)
	if step < len(sc.Steps) {
		outcome += fmt.Sprintf(", waiting for step %d of %d", step+1, len(sc.Steps))
	}
	p.rec.view(ns, func(r *nsRecord) { p.t.Logf("%s: scenario %s %s: %s", p.env.Name, sc.Name, outcome, r.describe()) })
	return p.result(ctx, sc, outcome)
}

// phaseCounts is how many phases each Job of ns has been seen in so far.
func (p *player) phaseCounts(ns string) map[string]int {
	counts := map[string]int{}
	p.rec.view(ns, func(r *nsRecord) {
		for name, j := range r.jobs {
			counts[name] = len(j.phases)
		}
	})
	return counts
}

// holds reports whether w holds in ns, looking at the phases seen after since.
func (p *player) holds(ns string, w When, since map[string]int) bool {
	ok := false
	p.rec.view(ns, func(r *nsRecord) {
		for name, j := range r.jobs {
			if (w.Job != "" && name != w.Job) || (w.CronJob != "" && j.cronOwner != w.CronJob) {
				continue
			}
			if w.Deleted {
				ok = ok || j.deleted
				continue
			}
			from := min(since[name], len(j.phases))
			for _, ph := range j.phases[from:] {
				ok = ok || string(ph) == w.Phase
			}
		}
	})
	return ok
}

// act performs a step's action.
func (p *player) act(ctx context.Context, ns string, st Step) error {
	switch {
	case st.Command != nil:
		return p.command(ctx, ns, *st.Command)
	case st.Patch != nil:
		ri, _, err := p.resource(ns, st.Patch.ObjectRef)
		if err != nil {
			return err
		}
		patch, err := json.Marshal(st.Patch.Merge)
		if err != nil {
			return err
		}
		_, err = ri.Patch(ctx, st.Patch.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	case st.Delete != nil:
		ri, _, err := p.resource(ns, st.Delete.ObjectRef)
		if err != nil {
			return err
		}
		if st.Delete.Selector != "" {
			return ri.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: st.Delete.Selector})
		}
		return ri.Delete(ctx, st.Delete.Name, metav1.DeleteOptions{})
	}
	return nil // a step that only waits
}

// command creates a Command on a Job as vcctl does.
func (p *player) command(ctx context.Context, ns string, c CommandAction) error {
	job, err := p.env.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, c.Job, metav1.GetOptions{})
	if err != nil {
		return err
	}
	ref := metav1.NewControllerRef(job, batch.SchemeGroupVersion.WithKind("Job"))
	cmd := &bus.Command{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: job.Name + "-" + strings.ToLower(c.Action) + "-", Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{*ref},
		},
		TargetObject: ref,
		Action:       c.Action,
	}
	_, err = p.env.Volcano.BusV1alpha1().Commands(ns).Create(ctx, cmd, metav1.CreateOptions{})
	return err
}

// create creates o in ns (unless its kind is cluster-scoped).
func (p *player) create(ctx context.Context, ns string, o *unstructured.Unstructured) error {
	ri, namespaced, err := p.resource(ns, ObjectRef{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName()})
	if err != nil {
		return err
	}
	if namespaced {
		o.SetNamespace(ns)
	}
	if _, err := ri.Create(ctx, o, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create %s %s: %w", o.GetKind(), o.GetName(), err)
	}
	return nil
}

// resource is the dynamic client of ref's kind: in ns when the kind is namespaced, which it
// reports.
func (p *player) resource(ns string, ref ObjectRef) (dynamic.ResourceInterface, bool, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, false, err
	}
	var versions []string
	if gv.Version != "" {
		versions = append(versions, gv.Version)
	}
	m, err := p.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, versions...)
	if err != nil && ref.APIVersion == "" {
		m, err = p.mapper.RESTMapping(schema.GroupKind{Kind: ref.Kind})
	}
	if err != nil {
		return nil, false, fmt.Errorf("kind %s %s: %w", ref.APIVersion, ref.Kind, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return p.env.Dynamic.Resource(m.Resource).Namespace(ns), true, nil
	}
	return p.env.Dynamic.Resource(m.Resource), false, nil
}

// events lists the Events of ns recorded on objects of kind, by object name.
func (p *player) events(ctx context.Context, ns, kind string) (map[string][]corev1.Event, error) {
	list, err := p.env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=" + kind})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	out := map[string][]corev1.Event{}
	for _, e := range list.Items {
		out[e.InvolvedObject.Name] = append(out[e.InvolvedObject.Name], e)
	}
	return out, nil
}
