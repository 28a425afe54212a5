package state

import (
	"fmt"
	"math"
	"strings"
	"testing"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
)

// sized is a Job of tasks with the given replicas and plugins.
func sized(plugins []string, replicas ...int32) *batch.Job {
	job := &batch.Job{}
	for i, n := range replicas {
		job.Spec.Tasks = append(job.Spec.Tasks, batch.TaskSpec{Name: "t" + string(rune('a'+i)), Replicas: n})
	}
	if plugins != nil {
		job.Spec.Plugins = map[string][]string{}
		for _, p := range plugins {
			job.Spec.Plugins[p] = nil
		}
	}
	return job
}

func TestTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  *batch.Job
		want string // part of the message; "" for a Job within the limits
	}{
		{"small", sized(nil, 1, 2), ""},
		{"at the limit", sized(nil, MaxReplicas), ""},
		{"at the limit over tasks", sized(nil, MaxReplicas/2, MaxReplicas/2), ""},
		{"one over", sized(nil, MaxReplicas+1),
			"spec.tasks ask for 10001 replicas in all; ringfire runs at most 10000 per Job: lower the replicas, or split the work into several Jobs (docs/jobs.md, Limits)"},
		{"over across tasks", sized(nil, MaxReplicas, 1), "ask for 10001 replicas in all"},
		{"the poison Job", sized(nil, math.MaxInt32), "spec.tasks ask for 2147483647 replicas in all"},
		{"two tasks of the largest int32 do not wrap", sized(nil, math.MaxInt32, math.MaxInt32), "ask for 4294967294 replicas"},
		{"128 tasks of the largest int32", sized(nil, manyMax(128)...), "ask for 274877906816 replicas"},
		{"negative replicas make no room for others", sized(nil, -5, MaxReplicas+5), "ask for 10005 replicas in all"},
		{"svc at its limit", sized([]string{"svc"}, MaxReplicasListed), ""},
		{"svc over", sized([]string{"svc"}, MaxReplicasListed+1),
			"spec.tasks ask for 4097 replicas in all; the svc plugin lists every replica's host in one object of at most 1 MiB, so ringfire runs at most 4096 per Job"},
		{"ssh over", sized([]string{"ssh"}, 5000), "the ssh plugin lists every replica's host"},
		{"pytorch adds svc", sized([]string{"pytorch"}, 5000), "the pytorch plugin lists every replica's host"},
		{"env and ray list nothing", sized([]string{"env", "ray", "hcclrank"}, MaxReplicas), ""},
		{"tensorflow at its limit", sized([]string{"tensorflow"}, MaxReplicasInPods), ""},
		{"tensorflow over", sized([]string{"svc", "tensorflow"}, MaxReplicasInPods+1),
			"spec.tasks ask for 1025 replicas in all; the tensorflow plugin writes every replica's host into pods, so ringfire runs at most 1024 per Job"},
		{"mpi over", sized([]string{"mpi", "ssh", "svc"}, 1, 1024), "the mpi plugin writes every replica's host into pods"},
		{"minAvailable beyond the limit", func() *batch.Job {
			j := sized(nil, 2)
			j.Spec.MinAvailable = math.MaxInt32
			return j
		}(), "spec.minAvailable is 2147483647, above ringfire's limit of 10000 replicas per Job"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := TooLarge(tc.job)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("TooLarge = %q, want %q", got, tc.want)
			}
		})
	}
}

func manyMax(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = math.MaxInt32
	}
	return out
}

func TestSaturatingArithmetic(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  int32
		want int32
	}{
		{"sum of none", SumInt32(), 0},
		{"plain sum", SumInt32(1, 2, 3), 6},
		{"sum saturates up", SumInt32(math.MaxInt32, 1), math.MaxInt32},
		{"sum saturates down", SumInt32(math.MinInt32, -1), math.MinInt32},
		{"sum comes back within", SumInt32(math.MaxInt32, 1, -2), math.MaxInt32 - 1},
		{"clamp above", ClampInt32(1 << 40), math.MaxInt32},
		{"clamp below", ClampInt32(-1 << 40), math.MinInt32},
		{"clamp within", ClampInt32(-7), -7},
		{"product", MulInt32(3, 4), 12},
		{"product saturates", MulInt32(1<<16, 1<<16), math.MaxInt32},
		{"negative product saturates", MulInt32(-(1 << 16), 1<<16), math.MinInt32},
		{"largest product", MulInt32(math.MaxInt32, math.MaxInt32), math.MaxInt32},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// TestPoisonJobCostsNoMoreThanASmallOne runs a Job of one task of 2147483647 replicas through
// every decision the controller makes before it would build anything (defaults, the limits,
// policies, the plan, the settle), and checks that it allocates no more than a Job of one
// replica: nothing here is sized by the replicas.
func TestPoisonJobCostsNoMoreThanASmallOne(t *testing.T) {
	decide := func(replicas int32) func() {
		return func() {
			job := sized(nil, replicas, replicas)
			Defaults(job)
			if TooLarge(job) == "" && replicas > MaxReplicas {
				t.Fatal("a Job beyond the limits was let through")
			}
			spec := SpecOf(job)
			choice := ApplyPolicies(job, Request{Event: bus.OutOfSyncEvent})
			step := Plan(Input{Phase: batch.Pending, Action: choice.Action, Spec: spec})
			step.Then.Settle(batch.Pending, spec, 0, Counts{Running: 1})
			RunningRule.Settle(batch.Running, spec, 0, Counts{Succeeded: 1})
			if spec.Replicas() < 0 || job.Spec.MinAvailable < 0 {
				t.Fatalf("a sum wrapped: replicas %d, minAvailable %d", spec.Replicas(), job.Spec.MinAvailable)
			}
		}
	}
	small := testing.AllocsPerRun(20, decide(1))
	poison := testing.AllocsPerRun(20, decide(math.MaxInt32))
	t.Logf("allocations per decision: %v for 1 replica a task, %v for 2147483647", small, poison)
	// The poison Job's message is one more string and its formatting.
	if poison > small+8 {
		t.Errorf("a Job of 2147483647 replicas allocates %v times, one of 1 replica %v", poison, small)
	}
}

// templated is a Job of one task whose template has labels of n entries and annotations of
// a entries, each key and value of size bytes together.
func templated(n, a, size int) *batch.Job {
	job := sized(nil, 1, 1)
	fill := func(count int) map[string]string {
		m := map[string]string{}
		for i := range count {
			k := fmt.Sprintf("k%06d", i)
			m[k] = strings.Repeat("v", max(size-len(k), 0))
		}
		return m
	}
	job.Spec.Tasks[1].Template.Labels, job.Spec.Tasks[1].Template.Annotations = fill(n), fill(a)
	return job
}

// A template beyond the bytes or the entries of labels and annotations is too large, named by
// its path (never by the user's text); at the limits it is not.
func TestTooLargeTemplate(t *testing.T) {
	per := MaxTemplateMetadataBytes / (2 * MaxTemplateMetadataEntries) // bytes an entry may take at full maps
	for _, tc := range []struct {
		name string
		job  *batch.Job
		want string
	}{
		{"small", templated(10, 10, 40), ""},
		{"at every limit", templated(MaxTemplateMetadataEntries, MaxTemplateMetadataEntries, per), ""},
		{"one byte over", func() *batch.Job {
			j := templated(MaxTemplateMetadataEntries, MaxTemplateMetadataEntries, per)
			j.Spec.Tasks[1].Template.Labels["k000000"] += "v"
			return j
		}(), "spec.tasks[1].template.metadata carries more than 65536 bytes of labels and annotations (keys and values together); " +
			"ringfire takes at most that much in a pod template, since every pod copies it: keep data in a ConfigMap or the pod's spec (docs/jobs.md, Limits)"},
		{"one annotation of 1 MiB", templated(0, 1, 1<<20), "spec.tasks[1].template.metadata carries more than 65536 bytes"},
		{"too many labels", templated(MaxTemplateMetadataEntries+1, 0, 8),
			"spec.tasks[1].template.metadata has 257 labels; ringfire takes at most 256, since every pod copies them: keep fewer, and data in a ConfigMap or the pod's spec (docs/jobs.md, Limits)"},
		{"too many annotations", templated(0, 60000, 10), "spec.tasks[1].template.metadata has 60000 annotations; ringfire takes at most 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := TooLarge(tc.job)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("TooLarge = %q, want %q", got, tc.want)
			}
		})
	}
	if got := TemplateTooLargeAtAdmission(); !strings.HasSuffix(got, "(docs/jobs.md, Limits)") || !strings.Contains(got, "more than 65536 bytes") {
		t.Errorf("the CRD's message %q", got)
	}
}

// Telling a template too large costs no more than the limits: the count stops at the first
// entry past them, whatever the template's size.
func TestTemplateBytesStopAtTheLimit(t *testing.T) {
	job := templated(0, 200, 4<<10) // 800 KiB of annotations, within the entries
	tmpl := &job.Spec.Tasks[1].Template
	if n := TemplateMetadataBytes(tmpl, MaxTemplateMetadataBytes); n > MaxTemplateMetadataBytes+(4<<10) {
		t.Errorf("counted %d bytes, want to stop within one entry of %d", n, MaxTemplateMetadataBytes)
	}
	if allocs := testing.AllocsPerRun(10, func() { TemplateMetadataBytes(tmpl, MaxTemplateMetadataBytes) }); allocs > 0 {
		t.Errorf("%v allocations to count", allocs)
	}
}
