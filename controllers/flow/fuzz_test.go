package flow

import (
	"strings"
	"testing"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	flowv1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"
)

// flowsOf reads a flow's text: steps separated by ";", each "name" or "name:target,target".
func flowsOf(text string) []flowv1.Flow {
	var flows []flowv1.Flow
	for _, step := range strings.Split(text, ";") {
		name, targets, deps := strings.Cut(step, ":")
		f := flowv1.Flow{Name: name}
		if deps {
			f.DependsOn = &flowv1.DependsOn{Targets: strings.Split(targets, ",")}
		}
		flows = append(flows, f)
	}
	return flows
}

// FuzzFlowGraph: whatever a JobFlow's steps and dependencies say, checking them never panics;
// a graph accepted lists its steps in spec order, and the steps ready when every Job has
// Completed are none, and when no Job exists are exactly those that wait for nothing; a flow
// refused says why.
func FuzzFlowGraph(f *testing.F) {
	for _, s := range []string{"a", "a;b:a;c:a,b", "a:a", "a:b;b:a", "a;a", "a:", "a:b", ";", "", "a;b:a;c:b;d:c,a", ":,:,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		flows := flowsOf(text)
		g, err := NewGraph(flows)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q: an empty refusal", text)
			}
			return
		}
		steps := g.Steps()
		if len(steps) != len(flows) {
			t.Fatalf("%q: %d steps of %d flows", text, len(steps), len(flows))
		}
		if ready := g.Ready(func(string) (batch.JobPhase, bool) { return batch.Completed, true }); len(ready) != 0 {
			t.Fatalf("%q: %v ready when every step has its Job", text, ready)
		}
		ready := g.Ready(func(string) (batch.JobPhase, bool) { return "", false })
		want := 0
		for _, fl := range flows {
			if fl.DependsOn == nil || len(fl.DependsOn.Targets) == 0 {
				want++
			}
		}
		if len(ready) != want {
			t.Fatalf("%q: %v ready with no Job, want the %d that wait for nothing", text, ready, want)
		}
		_ = Ignored(flows)
	})
}

// FuzzTemplateOf: whatever a Job's created-by-template label says, reading it never panics, and
// a key read is "namespace/name" with neither part empty and one "/" (the crasher kept in
// testdata, "/.0", read as "//0").
func FuzzTemplateOf(f *testing.F) {
	for _, s := range []string{"ns.t", "ns.", ".t", "", "a.b.c", "ns/x.t", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		key, ok := TemplateOf(ref)
		if !ok {
			return
		}
		ns, name, found := strings.Cut(key, "/")
		if !found || ns == "" || name == "" || strings.Contains(name, "/") {
			t.Fatalf("TemplateOf(%q) = %q", ref, key)
		}
	})
}
