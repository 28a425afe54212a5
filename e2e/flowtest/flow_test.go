package flowtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	flowv1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"

	"github.com/ringfire/ringfire/controllers/flow"
	"github.com/ringfire/ringfire/deploy/examples"
	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// The JobFlow behaviours, each on its own flow and namespace, side by side on one stack of
// three replicas on a real API server, with KWOK nodes whose pods run for a few seconds.
func TestJobFlows(t *testing.T) {
	s := stack.Start(t, stack.Options{Replicas: 3, StandIn: true})
	stack.RunParallel(t, s,
		stack.Case{Name: "linear", Run: linear},
		stack.Case{Name: "fan-in, retain policy delete", Run: fanInDelete},
		stack.Case{Name: "a failing step", Run: failingStep},
		stack.Case{Name: "template changed mid-flow", Run: templateChanged},
		stack.Case{Name: "missing template, then made", Run: missingTemplate},
		stack.Case{Name: "bad dependencies", Run: badDependencies},
		stack.Case{Name: "flow deleted mid-run", Run: deletedMidRun},
		stack.Case{Name: "the example of deploy/examples", Run: example},
		stack.Case{Name: "patch and probe ignored, as under Volcano", Run: ignored},
		stack.Case{Name: "a step's Job deleted by its TTL is not run again", Run: ttlDeleted},
		stack.Case{Name: "a step's name taken, then freed", Run: nameTaken},
	)
	// Alone, and first (the parallel cases wait for the test function to return): it kills a
	// replica, and the cases above then run on the two left.
	t.Run("replica killed mid-flow", func(t *testing.T) { replicaKilled(t, s) })
}

// linear: a → b → c run one after the other; the flow Runs, then Succeeds; its status lists
// the three Jobs as Volcano does; each Job is the template's with the flow's marks; the
// templates list their Jobs; one Created Event per step, as Volcano records.
func linear(t *testing.T, s *stack.Stack) {
	const ns, name = "flow-linear", "etl"
	namespace(t, s, ns)
	jobs := watchJobs(t, s, ns)
	for _, n := range []string{"a", "b", "c"} {
		template(t, s, ns, n, "2s", "")
	}
	created := createFlow(t, s, newFlow(ns, name, "", step("a"), step("b", "a"), step("c", "b")))
	var sawRunning bool
	stack.WaitFor(t, "the flow Succeeds", 90*time.Second, func() (bool, string) {
		jf := getFlow(t, s, ns, name)
		sawRunning = sawRunning || jf.Status.State.Phase == flowv1.Running
		return jf.Status.State.Phase == flowv1.Succeed, string(jf.Status.State.Phase) + " " + jobs.String()
	})
	jf := getFlow(t, s, ns, name)
	if !sawRunning {
		t.Error("the flow was never seen Running")
	}
	checkAfter(t, jobs, "etl-b", "etl-a")
	checkAfter(t, jobs, "etl-c", "etl-b")
	checkOnce(t, jobs)
	st := jf.Status
	if want := []string{"etl-a", "etl-b", "etl-c"}; !slices.Equal(st.CompletedJobs, want) || len(st.JobStatusList) != 3 || len(st.Conditions) != 3 {
		t.Errorf("status %+v, want completedJobs %v, three jobStatusList entries and conditions", st, want)
	}
	for _, js := range st.JobStatusList {
		h := js.RunningHistories
		if js.State != batch.Completed || len(h) == 0 || h[len(h)-1].State != batch.Completed || js.EndTimestamp.IsZero() {
			t.Errorf("jobStatusList entry %+v, want Completed with its history and end time", js)
		}
	}
	if c := st.Conditions["etl-a"]; c.Phase != batch.Completed || c.TaskStatusCount["main"].Phase["Succeeded"] != 1 {
		t.Errorf("condition of etl-a %+v, want Completed with one Succeeded pod of task main", c)
	}
	a, _ := jobs.get("etl-a")
	if a.labels[flow.CreatedByJobTemplate] != ns+".a" || a.labels[flow.CreatedByJobFlow] != ns+"."+name || len(a.owners) != 1 || a.owners[0].UID != created.UID ||
		!ptr.Deref(a.owners[0].Controller, false) || a.spec.Tasks[0].Name != "main" {
		t.Errorf("job etl-a: labels %v owners %+v tasks %+v; want the template's spec, controlled by the flow", a.labels, a.owners, a.spec.Tasks)
	}
	if got := s.Events(ns, name, "Created"); len(got) != 3 {
		t.Errorf("Created events %v, want one per step", got)
	}
	writes := flowWrites(s, ns)
	t.Logf("writes for a flow of 3 steps: %v", writes)
	if writes["create job"] != 3 {
		t.Errorf("Job creates %d, want 3 (one per step)", writes["create job"])
	}
	for _, rc := range s.RefusedCreates() {
		if strings.Contains(rc.What, "etl-") {
			t.Errorf("a create refused as AlreadyExists: %s", rc.What)
		}
	}
	stack.WaitFor(t, "template a lists its Job", 20*time.Second, func() (bool, string) {
		jt, err := s.Volcano.FlowV1alpha1().JobTemplates(ns).Get(context.Background(), "a", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return slices.Equal(jt.Status.JobDependsOnList, []string{"etl-a"}), strings.Join(jt.Status.JobDependsOnList, ",")
	})
}

// fanInDelete: c waits for both a and b; once the flow Succeeds its Jobs are deleted (retain
// policy delete), and its status stays as it was.
func fanInDelete(t *testing.T, s *stack.Stack) {
	const ns, name = "flow-fanin", "fan"
	namespace(t, s, ns)
	jobs := watchJobs(t, s, ns)
	template(t, s, ns, "a", "1s", "")
	template(t, s, ns, "b", "4s", "")
	template(t, s, ns, "c", "1s", "")
	createFlow(t, s, newFlow(ns, name, flowv1.Delete, step("a"), step("b"), step("c", "a", "b")))
	jf := waitFlow(t, s, ns, name, flowv1.Succeed, 90*time.Second, jobs)
	checkAfter(t, jobs, "fan-c", "fan-a", "fan-b")
	stack.WaitFor(t, "the flow's Jobs deleted", 30*time.Second, func() (bool, string) {
		for _, j := range jobs.list() {
			if !j.deleted {
				return false, jobs.String()
			}
		}
		return len(jobs.list()) == 3, jobs.String()
	})
	checkOnce(t, jobs)
	deleted := time.Now()
	defer func() {
		t.Logf("the Jobs' pods were gone %v after the Jobs", time.Since(deleted).Round(time.Millisecond))
	}()
	stack.WaitFor(t, "the Jobs' pods deleted with them", 30*time.Second, func() (bool, string) {
		pods, err := s.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var left []string
		for _, p := range pods.Items {
			left = append(left, p.Name)
		}
		return len(left) == 0, strings.Join(left, ", ")
	})
	time.Sleep(2 * time.Second)
	if w := flowWrites(s, ns); w["delete job"] != 3 {
		t.Errorf("writes %v, want 3 Job deletes, one each", w)
	}
	after := getFlow(t, s, ns, name)
	if after.ResourceVersion != jf.ResourceVersion || after.Status.State.Phase != flowv1.Succeed || len(after.Status.CompletedJobs) != 3 {
		t.Errorf("status after the deletes %+v (resourceVersion %s, was %s), want it kept as at Succeed", after.Status, after.ResourceVersion, jf.ResourceVersion)
	}
}

// failingStep: b's Job is Terminated (its pod fails); the flow Fails, and c,
// which depends on b, is never made.
func failingStep(t *testing.T, s *stack.Stack) {
	const ns, name = "flow-fail", "broken"
	namespace(t, s, ns)
	jobs := watchJobs(t, s, ns)
	template(t, s, ns, "a", "1s", "")
	template(t, s, ns, "b", "1s", "3")
	template(t, s, ns, "c", "1s", "")
	createFlow(t, s, newFlow(ns, name, "", step("a"), step("b", "a"), step("c", "b")))
	jf := waitFlow(t, s, ns, name, flowv1.Failed, 90*time.Second, jobs)
	if !slices.Equal(jf.Status.TerminatedJobs, []string{"broken-b"}) || !slices.Equal(jf.Status.CompletedJobs, []string{"broken-a"}) {
		t.Errorf("status %+v, want broken-a completed and broken-b terminated", jf.Status)
	}
	time.Sleep(3 * time.Second)
	if _, made := jobs.get("broken-c"); made {
		t.Error("broken-c was made though broken-b did not complete")
	}
	checkOnce(t, jobs)
}

// templateChanged: b's template is changed while a runs; b's Job is made from the template as
// it is when b starts.
func templateChanged(t *testing.T, s *stack.Stack) {
	const ns, name = "flow-tmpl", "retmpl"
	namespace(t, s, ns)
	jobs := watchJobs(t, s, ns)
	template(t, s, ns, "a", "6s", "")
	template(t, s, ns, "b", "1s", "")
	createFlow(t, s, newFlow(ns, name, "", step("a"), step("b", "a")))
	stack.WaitFor(t, "a made", 30*time.Second, func() (bool, string) {
		_, ok := jobs.get("retmpl-a")
		return ok, jobs.String()
	})
	tmpls := s.Volcano.FlowV1alpha1().JobTemplates(ns)
	jt, err := tmpls.Get(context.Background(), "b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jt.Spec.Tasks[0].Replicas = 2
	jt.Spec.Tasks[0].Template.Labels = map[string]string{"edited": "yes"}
	if _, err := tmpls.Update(context.Background(), jt, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if a, _ := jobs.get("retmpl-a"); a.phase == batch.Completed {
		t.Fatal("a completed before the template was changed; the test needs a longer pod")
	}
	waitFlow(t, s, ns, name, flowv1.Succeed, 90*time.Second, jobs)
	b, _ := jobs.get("retmpl-b")
	if b.spec.Tasks[0].Replicas != 2 || b.spec.Tasks[0].Template.Labels["edited"] != "yes" {
		t.Errorf("job retmpl-b tasks %+v, want the changed template (2 replicas, label edited)", b.spec.Tasks)
	}
	checkOnce(t, jobs)
}

// missingTemplate: a step whose template does not exist waits, told in a TemplateNotFound
// Warning; the flow goes on once the template is made.
func missingTemplate(t *testing.T, s *stack.Stack) {
	const ns, name = "flow-missing", "waits"
	namespace(t, s, ns)
	jobs := watchJobs(t, s, ns)
	template(t, s, ns, "a", "1s", "")
	createFlow(t, s, newFlow(ns, name, "", step("a"), step("late", "a")))
	stack.WaitFor(t, "a TemplateNotFound warning", 60*time.Second, func() (bool, string) {
		got := s.Events(ns, name, "TemplateNotFound")
		return len(got) > 0 && strings.Contains(got[0], "late"), jobs.String()
	})
	if jf := getFlow(t, s, ns, name); jf.Status.State.Phase == flowv1.Succeed {
		t.Errorf("flow Succeeded without its second step")
	}
	template(t, s, ns, "late", "1s", "")
	waitFlow(t, s, ns, name, flowv1.Succeed, 60*time.Second, jobs)
	if got := s.Events(ns, name, "TemplateNotFound"); len(got) != 1 {
		t.Errorf("TemplateNotFound events %v, want one (told once)", got)
	}
	checkOnce(t, jobs)
}

// badDependencies: what the CRD can see is refused at the API server (a step depending on
// itself, on an unknown step, two steps of one name, a Job name too long), and a longer cycle
// by the admission policy ringfire-jobflow-dag; on a cluster without the policy (it is taken
// out here), the controller tells the cycle in an InvalidFlow Warning and makes no Job of it.
func badDependencies(t *testing.T, s *stack.Stack) {
	const ns = "flow-bad"
	namespace(t, s, ns)
	jobs := watchJobs(t, s, ns)
	template(t, s, ns, "a", "1s", "")
	flows := s.Volcano.FlowV1alpha1().JobFlows(ns)
	cycle := newFlow(ns, "cycle", "", step("a"), step("b", "a", "d"), step("c", "b"), step("d", "c"))
	for _, tc := range []struct {
		flow *flowv1.JobFlow
		says string
	}{
		{newFlow(ns, "self", "", step("a", "a")), "cannot depend on itself"},
		{newFlow(ns, "unknown", "", step("a", "x")), "dependsOn.targets must name steps of the same JobFlow"},
		{newFlow(ns, "twice", "", step("a"), step("a")), "step names must be unique"},
		{newFlow(ns, strings.Repeat("long", 16), "", step("a")), "at most 63 characters"},
		{cycle, "jobflow flow is not dag: steps b, c, d depend on themselves"},
	} {
		_, err := flows.Create(context.Background(), tc.flow, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("create jobflow %s: %v, want Invalid saying %q", tc.flow.Name, err, tc.says)
		}
	}
	// DAGs pass, the largest ones too (the policy's cost grows with the cube of the steps): 32
	// steps in a chain, 32 without any dependency, and a diamond.
	chain, loose := []flowv1.Flow{step("s0")}, []flowv1.Flow{step("s0")}
	for i := 1; i < 32; i++ {
		chain = append(chain, step(fmt.Sprintf("s%d", i), fmt.Sprintf("s%d", i-1)))
		loose = append(loose, step(fmt.Sprintf("s%d", i)))
	}
	longCycle := append(slices.Clone(chain[1:]), step("s0", "s31"))
	for _, dag := range []*flowv1.JobFlow{
		newFlow(ns, "diamond", "", step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c")),
		newFlow(ns, "chain", "", chain...),
		newFlow(ns, "loose", "", loose...),
	} {
		if _, err := flows.Create(context.Background(), dag, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("the DAG %s refused: %v", dag.Name, err)
		}
	}
	if _, err := flows.Create(context.Background(), newFlow(ns, "ring", "", longCycle...), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "jobflow flow is not dag") {
		t.Errorf("a cycle through all 32 steps: %v, want it refused as not a DAG", err)
	}
	bindings := s.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	binding, err := bindings.Get(context.Background(), "ringfire-jobflow-dag", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := bindings.Delete(context.Background(), binding.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		binding.ResourceVersion = ""
		if _, err := bindings.Create(context.Background(), binding, metav1.CreateOptions{}); err != nil {
			t.Errorf("restore the binding ringfire-jobflow-dag: %v", err)
		}
	})
	// The API server may still hold the binding a moment after its delete.
	stack.WaitFor(t, "the cycle accepted without the policy", 20*time.Second, func() (bool, string) {
		_, err := flows.Create(context.Background(), cycle, metav1.CreateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	stack.WaitFor(t, "an InvalidFlow warning", 60*time.Second, func() (bool, string) {
		got := s.Events(ns, "cycle", "InvalidFlow")
		return len(got) > 0 && strings.Contains(got[0], "b → d → c → b"), strings.Join(got, "; ")
	})
	time.Sleep(2 * time.Second)
	if names := jobs.names(); len(names) > 0 {
		t.Errorf("jobs %v made for a flow that is not a DAG", names)
	}
}

// deletedMidRun: a flow deleted while its first Job runs takes the Job with it (owner
// references, kube-controller-manager's garbage collector); the next step is never made.
func deletedMidRun(t *testing.T, s *stack.Stack) {
	const ns, name = "flow-delete", "gone"
	namespace(t, s, ns)
	jobs := watchJobs(t, s, ns)
	template(t, s, ns, "a", "30s", "")
	template(t, s, ns, "b", "1s", "")
	createFlow(t, s, newFlow(ns, name, "", step("a"), step("b", "a")))
	stack.WaitFor(t, "a running", 30*time.Second, func() (bool, string) {
		a, ok := jobs.get("gone-a")
		return ok && a.phase == batch.Running, jobs.String()
	})
	err := s.Volcano.FlowV1alpha1().JobFlows(ns).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	if err != nil {
		t.Fatal(err)
	}
	stack.WaitFor(t, "gone-a deleted with its flow", 30*time.Second, func() (bool, string) {
		a, _ := jobs.get("gone-a")
		return a.deleted, jobs.String()
	})
	if _, made := jobs.get("gone-b"); made {
		t.Error("gone-b was made though its flow was deleted")
	}
}

// replicaKilled: the replica that holds a running flow's slot is killed (kill -9) while its
// second step runs; the slot's next holder goes on, the flow Succeeds, and no Job is made
// twice.
func replicaKilled(t *testing.T, s *stack.Stack) {
	const ns, name = "flow-kill", "survivor"
	namespace(t, s, ns)
	jobs := watchJobs(t, s, ns)
	steps := []flowv1.Flow{step("s1")}
	for _, n := range []string{"s2", "s3", "s4"} {
		steps = append(steps, step(n, steps[len(steps)-1].Name))
	}
	for _, st := range steps {
		template(t, s, ns, st.Name, "3s", "")
	}
	createFlow(t, s, newFlow(ns, name, "", steps...))
	// The Created Event of s2 is posted a moment after the Job; it must not die with the replica.
	stack.WaitFor(t, "s2 made and told", 60*time.Second, func() (bool, string) {
		_, ok := jobs.get("survivor-s2")
		return ok && len(s.Events(ns, name, "Created")) == 2, jobs.String()
	})
	holder := s.SlotHolder(ns + "/" + name)
	t.Logf("killing %s, which holds the flow's slot", holder)
	s.KillReplica(holder)
	waitFlow(t, s, ns, name, flowv1.Succeed, 120*time.Second, jobs)
	checkOnce(t, jobs)
	for i := 1; i < len(steps); i++ {
		checkAfter(t, jobs, name+"-"+steps[i].Name, name+"-"+steps[i-1].Name)
	}
	if got := s.Events(ns, name, "Created"); len(got) != 4 {
		t.Errorf("Created events %v, want one per step", got)
	}
}

// example: the JobFlow of deploy/examples (two extracts, then a merge of both), applied as
// `ringfire dev up` applies it, Succeeds.
func example(t *testing.T, s *stack.Stack) {
	const ns = "flow-example"
	namespace(t, s, ns)
	jobs := watchJobs(t, s, ns)
	data, err := examples.Files.ReadFile("50-jobflow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var name string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "JobTemplate":
			var jt flowv1.JobTemplate
			if err := yaml.UnmarshalStrict([]byte(doc), &jt); err != nil {
				t.Fatal(err)
			}
			jt.Namespace = ns
			if _, err := s.Volcano.FlowV1alpha1().JobTemplates(ns).Create(context.Background(), &jt, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		case "JobFlow":
			var jf flowv1.JobFlow
			if err := yaml.UnmarshalStrict([]byte(doc), &jf); err != nil {
				t.Fatal(err)
			}
			jf.Namespace, name = ns, jf.Name
			createFlow(t, s, &jf)
		default:
			t.Fatalf("50-jobflow.yaml: unexpected kind %q", meta.Kind)
		}
	}
	waitFlow(t, s, ns, name, flowv1.Succeed, 90*time.Second, jobs)
	checkAfter(t, jobs, name+"-merge", name+"-extract-users", name+"-extract-orders")
	checkOnce(t, jobs)
}

// flowWrites counts the replicas' writes of the JobFlow controllers in namespace ns, by kind:
// Job creates and deletes, flow and template status updates.
func flowWrites(s *stack.Stack, ns string) map[string]int {
	counts := map[string]int{}
	for _, w := range s.Writes() {
		method, path, _ := strings.Cut(w, " ")
		if !strings.Contains(path, "/namespaces/"+ns+"/") {
			continue
		}
		switch {
		case strings.HasSuffix(path, "/jobs") && method == "POST":
			counts["create job"]++
		case strings.Contains(path, "/jobs/") && method == "DELETE":
			counts["delete job"]++
		case strings.Contains(path, "/jobflows/") && strings.HasSuffix(path, "/status"):
			counts["jobflow status"]++
		case strings.Contains(path, "/jobtemplates/") && strings.HasSuffix(path, "/status"):
			counts["jobtemplate status"]++
		}
	}
	return counts
}

// ignored: a step's patch and probe change nothing, as under Volcano (its Job is the
// template's; it starts once its target completed), and the flow says so in an Ignored Warning.
func ignored(t *testing.T, s *stack.Stack) {
	const ns, name = "flow-ignored", "odd"
	namespace(t, s, ns)
	jobs := watchJobs(t, s, ns)
	template(t, s, ns, "a", "1s", "")
	template(t, s, ns, "b", "1s", "")
	b := step("b", "a")
	b.Patch = &flowv1.Patch{JobSpec: batch.JobSpec{MaxRetry: 7}}
	b.DependsOn.Probe = &flowv1.Probe{TaskStatusList: []flowv1.TaskStatus{{TaskName: "main", Phase: "Running"}}}
	createFlow(t, s, newFlow(ns, name, "", step("a"), b))
	waitFlow(t, s, ns, name, flowv1.Succeed, 60*time.Second, jobs)
	checkAfter(t, jobs, "odd-b", "odd-a")
	if j, _ := jobs.get("odd-b"); j.spec.MaxRetry == 7 {
		t.Errorf("odd-b has the patch's maxRetry 7; Volcano does not apply patches")
	}
	got := s.Events(ns, name, "Ignored")
	if len(got) != 1 || !strings.Contains(got[0], "patch of steps [b]") || !strings.Contains(got[0], "probes of steps [b]") {
		t.Errorf("Ignored events %v, want one naming b's patch and probes", got)
	}
}

// ttlDeleted: a step's template sets ttlSecondsAfterFinished 0, so its Job is deleted as soon as
// it completes; the step is done (the flow's status says so), the next one starts, it is not
// run again, and the flow Succeeds.
func ttlDeleted(t *testing.T, s *stack.Stack) {
	const ns, name = "flow-ttl", "short"
	namespace(t, s, ns)
	jobs := watchJobs(t, s, ns)
	jt := &flowv1.JobTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"},
		Spec: batch.JobSpec{SchedulerName: "volcano", TTLSecondsAfterFinished: ptr.To[int32](0),
			Tasks: []batch.TaskSpec{vcjob.Task("main", 1, "1s", "")}},
	}
	if _, err := s.Volcano.FlowV1alpha1().JobTemplates(ns).Create(context.Background(), jt, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	template(t, s, ns, "b", "8s", "")
	createFlow(t, s, newFlow(ns, name, "", step("a"), step("b", "a")))
	stack.WaitFor(t, "short-a completed and deleted by its TTL", 60*time.Second, func() (bool, string) {
		a, _ := jobs.get("short-a")
		return a.deleted && !a.done.IsZero(), jobs.String()
	})
	waitFlow(t, s, ns, name, flowv1.Succeed, 60*time.Second, jobs)
	checkAfter(t, jobs, "short-b", "short-a")
	checkOnce(t, jobs)
	if w := flowWrites(s, ns); w["create job"] != 2 {
		t.Errorf("writes %v, want 2 Job creates", w)
	}
}

// nameTaken: a Job of a step's name exists and is not the flow's; the flow says so and waits,
// and makes the step's Job once that Job is gone.
func nameTaken(t *testing.T, s *stack.Stack) {
	const ns, name = "flow-taken", "taken"
	namespace(t, s, ns)
	jobs := watchJobs(t, s, ns)
	template(t, s, ns, "a", "1s", "")
	other := vcjob.Create(t, s.Volcano, vcjob.New(ns, "taken-a", vcjob.Task("main", 1, "60s", "")))
	createFlow(t, s, newFlow(ns, name, "", step("a")))
	stack.WaitFor(t, "a JobNameTaken warning", 30*time.Second, func() (bool, string) {
		return len(s.Events(ns, name, "JobNameTaken")) > 0, jobs.String()
	})
	err := s.Volcano.BatchV1alpha1().Jobs(ns).Delete(context.Background(), other.Name, metav1.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFlow(t, s, ns, name, flowv1.Succeed, 60*time.Second, jobs)
	if a, _ := jobs.get("taken-a"); len(a.uids) != 2 || len(a.owners) != 1 || a.owners[0].Name != name {
		t.Errorf("taken-a: UIDs %v owners %+v; want the other Job, then the flow's", a.uids, a.owners)
	}
}
