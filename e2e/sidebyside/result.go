package sidebyside

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	flowv1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// Result is what one side did in one scenario: rows of a field and its value, in a fixed
// order, with everything that differs between runs by nature (UIDs, the times in the names of
// a CronJob's Jobs) replaced by placeholders.
type Result struct {
	Scenario, Side string
	Rows           []Row
}

// Row is one field of a Result.
type Row struct{ Field, Value string }

// Markdown is the result alone as a table, for a run of one side.
func (r *Result) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s (%s alone)\n\n| field | %s |\n|---|---|\n", r.Scenario, r.Side, r.Side)
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "| %s | %s |\n", cell(row.Field), cell(row.Value))
	}
	return b.String()
}

// Value returns the value of field, and whether the result has it.
func (r *Result) Value(field string) (string, bool) {
	for _, row := range r.Rows {
		if row.Field == field {
			return row.Value, true
		}
	}
	return "", false
}

// result turns what the recorder saw of sc's namespace into sc's Result.
func (p *player) result(ctx context.Context, sc *Scenario, outcome string) *Result {
	ns := sc.Namespace()
	events, err := p.events(ctx, ns, "Job")
	res := &Result{Scenario: sc.Name, Side: p.env.Name, Rows: []Row{{"outcome", outcome}}}
	if err != nil {
		res.Rows = append(res.Rows, Row{"error", "list events: " + err.Error()})
	}
	flowEvents, err := p.events(ctx, ns, "JobFlow")
	if err != nil {
		res.Rows = append(res.Rows, Row{"error", "list events: " + err.Error()})
	}
	p.rec.view(ns, func(r *nsRecord) {
		n := r.normalizer()
		add := func(field, value string) { res.Rows = append(res.Rows, Row{n.Replace(field), n.Replace(value)}) }
		jobs := slices.Clone(r.jobOrder)
		sort.SliceStable(jobs, func(a, b int) bool { return n.Replace(jobs[a]) < n.Replace(jobs[b]) })
		for _, name := range jobs {
			j := r.jobs[name]
			prefix := "job " + name + ": "
			add(prefix+"phases", phaseList(j.phases, j.deleted))
			add(prefix+"retries", strconv.Itoa(int(j.last.Status.RetryCount)))
			add(prefix+"version", strconv.Itoa(int(j.last.Status.Version)))
			add(prefix+"pod counts", counts(j.last.Status))
			add(prefix+"task counts", taskCounts(j.last.Status))
			pg, pgPhases := r.podGroupOf(j)
			add(prefix+"podgroup", pg)
			add(prefix+"podgroup phases", pgPhases)
			add(prefix+"podgroup conditions", r.podGroupConditionsOf(j))
			add(prefix+"objects", r.objectsOf("Job/"+name))
			gangEvents, others := splitEvents(events[name])
			add(prefix+"events", eventList(others))
			add(prefix+"PodGroupPending events", eventList(gangEvents))
		}
		for _, pod := range r.podsByName() {
			add("pod "+pod.name, pod.outcomes)
			add("pod "+pod.name+": spec", pod.spec)
			add("pod "+pod.name+": "+ownPrefix+"*", pod.own)
		}
		if orphans := r.objectsOf(""); orphans != "—" {
			add("objects without a Job owner", orphans)
		}
		for _, name := range slices.Sorted(maps.Keys(r.cronJobs)) {
			add("cronjob "+name, cronStatus(r.cronJobs[name], r.jobsOf(name)))
		}
		for _, name := range slices.Sorted(maps.Keys(r.flows)) {
			f := r.flows[name]
			prefix := "jobflow " + name + ": "
			add(prefix+"phases", strings.Join(toStrings(f.phases), " → "))
			add(prefix+"jobs", flowJobs(&f.last.Status))
			add(prefix+"job status list", flowJobStatusList(&f.last.Status))
			add(prefix+"events", eventList(flowEvents[name]))
		}
		for _, name := range slices.Sorted(maps.Keys(r.templates)) {
			add("jobtemplate "+name+": jobDependsOnList", listOrNone(sorted(r.templates[name].Status.JobDependsOnList)))
		}
	})
	return res
}

// normalizer replaces the parts of names and messages that differ between runs: a Job's UID
// (in its PodGroup's name) and the schedule time in the name of a CronJob's Job, numbered
// instead in the order of those times.
func (ns *nsRecord) normalizer() *strings.Replacer {
	var pairs []string
	made := map[string][]string{}
	for name, j := range ns.jobs {
		pairs = append(pairs, string(j.uid), "<uid>")
		if j.cronOwner != "" {
			made[j.cronOwner] = append(made[j.cronOwner], name)
		}
	}
	for cron, names := range made {
		sort.Strings(names) // the suffix is the scheduled minute: name order is time order
		for i, name := range names {
			pairs = append(pairs, name, fmt.Sprintf("%s-#%d", cron, i+1))
		}
	}
	return strings.NewReplacer(pairs...)
}

func phaseList[P ~string](phases []P, deleted bool) string {
	parts := make([]string, 0, len(phases)+1)
	for _, p := range phases {
		parts = append(parts, string(p))
	}
	if len(parts) == 0 {
		parts = append(parts, "(no phase)")
	}
	if deleted {
		parts = append(parts, "(deleted)")
	}
	return strings.Join(parts, " → ")
}

// counts are the Job's last pod counts, those that are not zero.
func counts(st batch.JobStatus) string {
	var parts []string
	for _, c := range []struct {
		name string
		n    int32
	}{{"pending", st.Pending}, {"running", st.Running}, {"succeeded", st.Succeeded}, {"failed", st.Failed}, {"terminating", st.Terminating}, {"unknown", st.Unknown}} {
		if c.n != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c.name, c.n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// taskCounts are the Job's last per-task pod counts (status.taskStatusCount).
func taskCounts(st batch.JobStatus) string {
	var parts []string
	for _, task := range slices.Sorted(maps.Keys(st.TaskStatusCount)) {
		phases := st.TaskStatusCount[task].Phase
		var counts []string
		for _, ph := range slices.Sorted(maps.Keys(phases)) {
			counts = append(counts, fmt.Sprintf("%s %d", ph, phases[ph]))
		}
		parts = append(parts, task+": "+listOrNone(counts))
	}
	return listOrNone(parts)
}

// podGroupOf describes the PodGroup of Job j (owned by it): its gang sizes and queue, whether it
// was deleted, and apart the phases it went through (which the scheduler sets).
func (ns *nsRecord) podGroupOf(j *jobRecord) (spec, phases string) {
	var specs, seqs []string
	for _, name := range slices.Sorted(maps.Keys(ns.podGroups)) {
		pg := ns.podGroups[name]
		if !ownedBy(pg.last.OwnerReferences, j.uid) {
			continue
		}
		s := fmt.Sprintf("%s: minMember %d%s, queue %s", name, pg.last.Spec.MinMember, taskMembers(pg.last.Spec), pg.last.Spec.Queue)
		if pg.deleted {
			s += " (deleted)"
		}
		specs = append(specs, s)
		seqs = append(seqs, phaseList(pg.phases, false))
	}
	return listOrNone(specs), listOrNone(seqs)
}

// podGroupConditionsOf lists the last conditions seen on Job j's PodGroup.
func (ns *nsRecord) podGroupConditionsOf(j *jobRecord) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(ns.podGroups)) {
		pg := ns.podGroups[name]
		if !ownedBy(pg.last.OwnerReferences, j.uid) {
			continue
		}
		for _, c := range pg.last.Status.Conditions {
			out = append(out, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
		}
	}
	return listOrNone(out)
}

func taskMembers(spec scheduling.PodGroupSpec) string {
	if len(spec.MinTaskMember) == 0 {
		return ""
	}
	var parts []string
	for _, task := range slices.Sorted(maps.Keys(spec.MinTaskMember)) {
		parts = append(parts, fmt.Sprintf("%s=%d", task, spec.MinTaskMember[task]))
	}
	return ", minTaskMember " + strings.Join(parts, " ")
}

// objectsOf lists the objects (not pods or PodGroups) whose owners include owner (kind/name),
// or that have no Job among their owners when owner is empty.
func (ns *nsRecord) objectsOf(owner string) string {
	var out []string
	for _, key := range slices.Sorted(maps.Keys(ns.objects)) {
		o := ns.objects[key]
		jobOwned := slices.ContainsFunc(o.owners, func(s string) bool { return strings.HasPrefix(s, "Job/") })
		if (owner == "" && jobOwned) || (owner != "" && !slices.Contains(o.owners, owner)) {
			continue
		}
		s := key
		if len(o.owners) > 1 || (owner == "" && len(o.owners) > 0) {
			s += " (owners " + strings.Join(o.owners, ", ") + ")"
		}
		if o.deleted {
			s += " (deleted)"
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return "—"
	}
	return strings.Join(out, ", ")
}

// splitEvents separates the PodGroupPending Events (the PodGroup's latest condition, repeated on
// the Job while it is not Scheduled) from the others.
func splitEvents(events []corev1.Event) (gang, others []corev1.Event) {
	for _, e := range events {
		if e.Reason == "PodGroupPending" {
			gang = append(gang, e)
		} else {
			others = append(others, e)
		}
	}
	return gang, others
}

// eventList is the Job's Events by source, reason and message, with how many times each was
// recorded. The source is "scheduler" or "controller", whatever the component's name.
func eventList(events []corev1.Event) string {
	count := map[string]int32{}
	for _, e := range events {
		source := "controller"
		if c := e.Source.Component; c == "volcano" || strings.Contains(c, "scheduler") {
			source = "scheduler"
		}
		count[fmt.Sprintf("%s [%s]: %s", e.Reason, source, e.Message)] += max(e.Count, 1)
	}
	if len(count) == 0 {
		return "none"
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(count)) {
		if count[k] > 1 {
			k = fmt.Sprintf("%s (×%d)", k, count[k])
		}
		out = append(out, k)
	}
	return strings.Join(out, "; ")
}

// podSummary is what the table shows of the pods of one name.
type podSummary struct{ name, outcomes, spec, own string }

// podsByName summarises the pods of the namespace by name: how each incarnation (in the order
// they were made) ended, and the spec of the first, which is what the Job's controller and its
// plugins made of the task's template.
func (ns *nsRecord) podsByName() []podSummary {
	byName := map[string][]*podRecord{}
	for _, uid := range ns.podOrder {
		p := ns.pods[uid]
		byName[p.name] = append(byName[p.name], p)
	}
	var out []podSummary
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		var outcomes []string
		for _, p := range byName[name] {
			outcomes = append(outcomes, podOutcome(p))
		}
		first := byName[name][0].first
		out = append(out, podSummary{name: name, outcomes: strings.Join(outcomes, ", "), spec: podSpec(first), own: ownLabels(first)})
	}
	return out
}

// ownPrefix marks the labels and annotations ringfire keeps for itself (the ring slot of the
// Job that made an object): shown apart from the rest, so that they do not hide a difference
// in the others.
const ownPrefix = "ringfire.io/"

// ownLabels are the labels and annotations of ownPrefix.
func ownLabels(pod *corev1.Pod) string {
	var own []string
	for _, m := range []map[string]string{pod.Labels, pod.Annotations} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if strings.HasPrefix(k, ownPrefix) {
				own = append(own, k+"="+m[k])
			}
		}
	}
	return listOrNone(own)
}

// podOutcome is the last phase seen of one pod, its exit code if it failed, and whether it was
// deleted.
func podOutcome(p *podRecord) string {
	s := string(p.last.Status.Phase)
	if p.last.Status.Phase == corev1.PodFailed {
		for _, c := range p.last.Status.ContainerStatuses {
			if c.State.Terminated != nil {
				s += fmt.Sprintf("(%d)", c.State.Terminated.ExitCode)
				break
			}
		}
	}
	if p.deleted {
		s += " (deleted)"
	}
	return s
}

// podSpec describes what a Job's controller adds to a task's template: the pod's labels and
// annotations, the first container's environment and mounts, the volumes, hostname and
// subdomain.
func podSpec(pod *corev1.Pod) string {
	var parts []string
	parts = append(parts, "labels "+keyList(pod.Labels), "annotations "+keyList(pod.Annotations))
	if len(pod.Spec.Containers) > 0 {
		c := pod.Spec.Containers[0]
		var env, mounts []string
		for _, e := range c.Env {
			env = append(env, e.Name+"="+envValue(e))
		}
		for _, m := range c.VolumeMounts {
			mounts = append(mounts, volumeName(m.Name)+":"+m.MountPath)
		}
		// Volcano adds its plugins' variables and mounts in map order, which changes from
		// pod to pod: the order is not part of what is compared.
		slices.Sort(env)
		slices.Sort(mounts)
		parts = append(parts, "env "+listOrNone(env), "mounts "+listOrNone(mounts))
	}
	var volumes []string
	for _, v := range pod.Spec.Volumes {
		src := "other"
		switch {
		case v.Secret != nil:
			src = "secret " + v.Secret.SecretName
		case v.ConfigMap != nil:
			src = "configMap " + v.ConfigMap.Name
		case v.PersistentVolumeClaim != nil:
			src = "pvc " + v.PersistentVolumeClaim.ClaimName
		case v.EmptyDir != nil:
			src = "emptyDir"
		case v.Projected != nil:
			src = "projected"
		}
		volumes = append(volumes, volumeName(v.Name)+"="+src)
	}
	slices.Sort(volumes)
	parts = append(parts, "volumes "+listOrNone(volumes))
	if pod.Spec.Hostname != "" || pod.Spec.Subdomain != "" {
		parts = append(parts, "hostname "+pod.Spec.Hostname+" subdomain "+pod.Spec.Subdomain)
	}
	return strings.Join(parts, "; ")
}

// envValue is a variable's value, or where it comes from.
func envValue(e corev1.EnvVar) string {
	switch from := e.ValueFrom; {
	case from == nil:
		return e.Value
	case from.ConfigMapKeyRef != nil:
		return "(configMap " + from.ConfigMapKeyRef.Name + " key " + from.ConfigMapKeyRef.Key + ")"
	case from.SecretKeyRef != nil:
		return "(secret " + from.SecretKeyRef.Name + " key " + from.SecretKeyRef.Key + ")"
	case from.FieldRef != nil:
		return "(field " + from.FieldRef.FieldPath + ")"
	}
	return "(other source)"
}

// volumeName is name, but for the service account token volume the API server adds, whose name
// ends in a random suffix: kube-api-access-*.
func volumeName(name string) string {
	if strings.HasPrefix(name, "kube-api-access-") {
		return "kube-api-access-*"
	}
	return name
}

// keyList is "k=v" for each entry of m, by key, but those of ownPrefix.
func keyList(m map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !strings.HasPrefix(k, ownPrefix) {
			out = append(out, k+"="+m[k])
		}
	}
	return listOrNone(out)
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// jobsOf are the Jobs made by CronJob name.
func (ns *nsRecord) jobsOf(cron string) []*jobRecord {
	var out []*jobRecord
	for _, j := range ns.jobs {
		if j.cronOwner == cron {
			out = append(out, j)
		}
	}
	return out
}

// cronStatus describes a CronJob's last status, and how many Jobs it made.
func cronStatus(cj *batch.CronJob, made []*jobRecord) string {
	set := func(ok bool) string {
		if ok {
			return "set"
		}
		return "unset"
	}
	suspended := cj.Spec.Suspend != nil && *cj.Spec.Suspend
	return fmt.Sprintf("made %d Job(s); active %d; lastScheduleTime %s; lastSuccessfulTime %s; suspend %v",
		len(made), len(cj.Status.Active), set(cj.Status.LastScheduleTime != nil), set(cj.Status.LastSuccessfulTime != nil), suspended)
}

func ownedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	return slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == uid })
}

// flowJobs lists a JobFlow's Jobs by the phase its status gives them.
func flowJobs(st *flowv1.JobFlowStatus) string {
	lists := []struct {
		name  string
		names []string
	}{
		{"pending", st.PendingJobs}, {"running", st.RunningJobs}, {"completed", st.CompletedJobs},
		{"failed", st.FailedJobs}, {"terminated", st.TerminatedJobs}, {"unknown", st.UnKnowJobs},
	}
	var out []string
	for _, l := range lists {
		if len(l.names) > 0 {
			out = append(out, l.name+" "+strings.Join(sorted(l.names), ","))
		}
	}
	return listOrNone(out)
}

// flowJobStatusList describes a JobFlow's jobStatusList: each Job's phase, restarts and the
// phases of its history (but the fleeting ones), by name.
func flowJobStatusList(st *flowv1.JobFlowStatus) string {
	var out []string
	for _, js := range st.JobStatusList {
		var history []string
		for _, h := range js.RunningHistories {
			// A Job is Terminating or Completing for milliseconds: whether a sync of its flow
			// falls in them is timing, on either side.
			if h.State != batch.Terminating && h.State != batch.Completing {
				history = append(history, string(h.State))
			}
		}
		out = append(out, fmt.Sprintf("%s %s restarts %d history [%s] conditions %v", js.Name, js.State, js.RestartCount,
			strings.Join(history, " "), st.Conditions[js.Name].Phase))
	}
	return listOrNone(sorted(out))
}

func toStrings[T ~string](in []T) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = string(v)
	}
	return out
}

func sorted(in []string) []string { return slices.Sorted(slices.Values(in)) }
