package flow

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	flowv1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"
)

// step is a flow step that depends on targets.
func step(name string, targets ...string) flowv1.Flow {
	f := flowv1.Flow{Name: name}
	if len(targets) > 0 {
		f.DependsOn = &flowv1.DependsOn{Targets: targets}
	}
	return f
}

func TestNewGraphRefusesWhatIsNotADAG(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flows []flowv1.Flow
		err   string // "" for a DAG
	}{
		{"empty", nil, ""},
		{"linear", []flowv1.Flow{step("a"), step("b", "a"), step("c", "b")}, ""},
		{"fan-in", []flowv1.Flow{step("a"), step("b"), step("c", "a", "b")}, ""},
		{"diamond", []flowv1.Flow{step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c")}, ""},
		{"listed before its dependency", []flowv1.Flow{step("b", "a"), step("a")}, ""},
		{"self", []flowv1.Flow{step("a", "a")}, "a → a"},
		{"two", []flowv1.Flow{step("a", "b"), step("b", "a")}, "a → b → a"},
		{"three behind a root", []flowv1.Flow{step("r"), step("a", "r", "c"), step("b", "a"), step("c", "b")}, "a → c → b → a"},
		{"unknown target", []flowv1.Flow{step("a", "x")}, `step "a" depends on "x", which is not a step`},
		{"duplicate", []flowv1.Flow{step("a"), step("a")}, `step "a" is listed twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGraph(tc.flows)
			if tc.err == "" {
				if err != nil || g == nil {
					t.Fatalf("NewGraph: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("NewGraph error = %v, want one containing %q", err, tc.err)
			}
		})
	}
}

func TestReadySteps(t *testing.T) {
	g, err := NewGraph([]flowv1.Flow{step("a"), step("b"), step("c", "a", "b"), step("d", "c")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		jobs map[string]batch.JobPhase
		want []string
	}{
		{"nothing made", nil, []string{"a", "b"}},
		{"one root made", map[string]batch.JobPhase{"a": batch.Running}, []string{"b"}},
		{"fan-in waits for both", map[string]batch.JobPhase{"a": batch.Completed, "b": batch.Running}, nil},
		{"fan-in met", map[string]batch.JobPhase{"a": batch.Completed, "b": batch.Completed}, []string{"c"}},
		{"a failed dependency holds", map[string]batch.JobPhase{"a": batch.Completed, "b": batch.Failed}, nil},
		{"a Job just created (no phase yet) counts as made", map[string]batch.JobPhase{"a": "", "b": ""}, nil},
		{"last", map[string]batch.JobPhase{"a": batch.Completed, "b": batch.Completed, "c": batch.Completed}, []string{"d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := g.Ready(func(s string) (batch.JobPhase, bool) {
				p, ok := tc.jobs[s]
				return p, ok
			})
			if !slices.Equal(got, tc.want) {
				t.Errorf("Ready = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestJobForTakesTheTemplate(t *testing.T) {
	jf := &flowv1.JobFlow{ObjectMeta: metav1.ObjectMeta{Name: "etl", Namespace: "ns", UID: "flow-uid"}}
	tmpl := &flowv1.JobTemplate{ObjectMeta: metav1.ObjectMeta{Name: "load", Namespace: "ns"}, Spec: batch.JobSpec{
		MinAvailable: 1, Queue: "default",
		Tasks: []batch.TaskSpec{{Name: "main", Replicas: 1, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}},
		}}}},
	}}
	job := JobFor(jf, "load", tmpl)
	if job.Name != "etl-load" || job.Namespace != "ns" {
		t.Errorf("job %s/%s, want ns/etl-load", job.Namespace, job.Name)
	}
	for _, m := range []map[string]string{job.Labels, job.Annotations} {
		if m[CreatedByJobTemplate] != "ns.load" || m[CreatedByJobFlow] != "ns.etl" {
			t.Errorf("marks %v, want %s=ns.load and %s=ns.etl", m, CreatedByJobTemplate, CreatedByJobFlow)
		}
	}
	if name, uid, ok := FlowOf(job); !ok || name != "etl" || uid != "flow-uid" {
		t.Errorf("controller %v %v %v, want the flow", name, uid, ok)
	}
	if !ptr.Deref(job.OwnerReferences[0].BlockOwnerDeletion, false) {
		t.Error("the owner reference does not block the flow's deletion")
	}
	if job.Spec.Queue != "default" || len(job.Spec.Tasks) != 1 || job.Spec.Tasks[0].Template.Spec.Containers[0].Image != "busybox:1" {
		t.Errorf("spec %+v, want the template's", job.Spec)
	}
	job.Spec.Tasks[0].Replicas = 5
	if tmpl.Spec.Tasks[0].Replicas != 1 {
		t.Error("the Job shares the template's tasks")
	}
}

func TestIgnoredNamesPatchesAndProbes(t *testing.T) {
	patched := step("b", "a")
	patched.Patch = &flowv1.Patch{JobSpec: batch.JobSpec{Queue: "research"}}
	probed := step("c", "a")
	probed.DependsOn.Probe = &flowv1.Probe{TaskStatusList: []flowv1.TaskStatus{{TaskName: "main", Phase: "Running"}}}
	if got := Ignored([]flowv1.Flow{step("a"), step("b", "a")}); got != "" {
		t.Errorf("Ignored = %q for a flow with neither", got)
	}
	got := Ignored([]flowv1.Flow{step("a"), patched, probed})
	for _, want := range []string{"patch of steps [b]", "probes of steps [c]", "Volcano"} {
		if !strings.Contains(got, want) {
			t.Errorf("Ignored = %q, want it to say %q", got, want)
		}
	}
}

func TestTemplateOf(t *testing.T) {
	for ref, want := range map[string]string{
		"ns.load":             "ns/load",
		"ns.load.v2":          "ns/load.v2",
		"noseparator":         "",
		".load":               "",
		"ns.":                 "",
		TemplateRef("a", "b"): "a/b",
	} {
		got, ok := TemplateOf(ref)
		if got != want || ok != (want != "") {
			t.Errorf("TemplateOf(%q) = %q %v, want %q", ref, got, ok, want)
		}
	}
}
