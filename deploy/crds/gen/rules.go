package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ringfire/ringfire/controllers/job/state"
)

// What Volcano's admission webhooks do, ringfire does in its CRDs, so that the API server
// refuses a bad object with a clear message and no webhook has to run. The validating webhook
// becomes CEL rules; the mutating webhook becomes static defaults where a constant expresses it.
//
// Left to the controller, because no static default can express them (as Volcano's mutating
// webhook does on create): job minAvailable = the sum of the tasks' minAvailable (or replicas),
// a task's minAvailable = its replicas, empty task names = "default<index>", maxRetry 0 = 3 and
// task maxRetry 0 = 3 when the user wrote an explicit 0, dnsPolicy ClusterFirstWithHostNet for
// host-network tasks, and the svc and ssh plugins that mpi and tensorflow imply.
//
// Negative replicas, minAvailable, maxRetry and ttlSecondsAfterFinished need no rule: the
// types' minimum markers already refuse them.
//
// Left unchecked, because CEL cannot express them or they depend on other objects: pod
// template validity, the task dependency graph being acyclic, job, task and pod names fitting a
// DNS label together, mpi master and worker tasks existing, the queue existing, and which fields
// an update may change. The ValidatingAdmissionPolicies beside the CRDs refuse negative resource
// quantities, a Job on a queue that has child queues or is not open, a queue under one five deep,
// bad hierarchy annotations, and deleting the root, default or a non-leaf Queue (docs/jobs.md,
// "Admission policies", lists what Volcano's webhooks refuse and ringfire does not).

// Bounds on list sizes. The API server refuses a CRD whose rules it cannot prove cheap, and a
// rule over a list costs in proportion to the list's longest possible length, so every list a
// rule walks needs a maxItems. They are far above anything a real Job has.
const (
	maxTasks         = 128 // tasks in one Job
	maxPolicies      = 32  // policies in one list (the Job's, or one task's)
	maxPolicyEvents  = 16  // events in one policy; there are 11 distinct events
	maxVolumes       = 64  // volumes in one Job
	maxEventLength   = 16  // the longest event name, CommandIssued, has 13 characters
	maxMountPathSize = 4096
	// maxTimeZoneLength bounds a CronJob's timeZone; the longest IANA name has 32 characters.
	maxTimeZoneLength = 64
)

// policyActions are the actions a policy may take: Volcano's user-facing actions. Volcano's
// webhook checks the action of event policies only and does not list RestartPartition, which
// its controller handles; ringfire checks every policy's action and allows RestartPartition.
var policyActions = []string{
	"AbortJob", "RestartJob", "RestartTask", "RestartPod", "RestartPartition",
	"TerminateJob", "CompleteJob", "ResumeJob",
}

// commandActions are the actions a Command may ask for: those of a policy, applied to a Job,
// and opening or closing a Queue (vcctl queue operate).
var commandActions = append(append([]string{}, policyActions...), "OpenQueue", "CloseQueue")

// events are the events of bus.volcano.sh/v1alpha1, in the order of the types' enum.
var events = []string{
	"*", "PodPending", "PodRunning", "PodFailed", "PodEvicted", "Unknown",
	"TaskCompleted", "OutOfSync", "CommandIssued", "JobUpdated", "TaskFailed",
}

// jobPlugins are the job plugins Volcano knows; its webhook refuses a Job that names another.
var jobPlugins = []string{"env", "svc", "ssh", "mpi", "pytorch", "tensorflow", "ray", "hcclrank"}

// maxPlugins bounds a Job's plugins map, so the rule over its names is cheap to prove.
const maxPlugins = 16

// internalEvents are raised by the controller itself; Volcano refuses them in a policy.
var internalEvents = []string{"OutOfSync", "CommandIssued", "PodRunning"}

// declareName declares metadata.name in the schema, so that a rule on the name can name the
// field in its error (fieldPath must be a path the schema declares).
var declareName = edit{at: "metadata", set: map[string]any{
	"properties": map[string]any{"name": map[string]any{"type": "string"}},
}}

// jobEdits are the edits to the Job CRD.
func jobEdits() []edit {
	edits := []edit{declareName, {
		at:       "",
		required: []string{"spec"},
		rules: []rule{{
			Rule:      `!has(self.metadata.name) || size(self.metadata.name) <= 63`,
			Message:   "a Job name must be at most 63 characters: its pods carry it as a label value",
			FieldPath: ".metadata.name",
		}},
	}}
	return append(edits, jobSpecEdits("spec")...)
}

// cronJobEdits are the edits to the CronJob CRD: its job template obeys the Job's rules.
func cronJobEdits() []edit {
	edits := []edit{declareName, {
		at: "",
		rules: []rule{{
			Rule:      `!has(self.metadata.name) || size(self.metadata.name) <= 52`,
			Message:   "a CronJob name must be at most 52 characters: the Jobs it creates add an 11-character suffix",
			FieldPath: ".metadata.name",
		}},
	}, {
		at:       "spec.jobTemplate",
		required: []string{"spec"},
	}, {
		// Kubernetes' API and Volcano's webhook refuse a zone in the schedule; the controller
		// still honours one in a CronJob that has it (an unchanged field is ratcheted).
		at: "spec.schedule",
		rules: []rule{{
			Rule:    `!self.contains('TZ')`,
			Message: "cannot use TZ or CRON_TZ in schedule, use spec.timeZone instead",
		}},
	}, {
		// What Volcano's webhook checks of a time zone name, short of looking it up (the
		// controller does, and reports an unknown one in an UnknownTimeZone event).
		at:  "spec.timeZone",
		set: map[string]any{"maxLength": maxTimeZoneLength},
		rules: []rule{{
			Rule:    `self != '' && self.lowerAscii() != 'local'`,
			Message: "timeZone must be an IANA time zone name such as Europe/Paris, not empty or Local; leave it out for UTC",
		}, {
			Rule:    `self.split('/').all(p, p.matches('^[A-Za-z0-9._+-]{1,14}$') && p != '.' && p != '..' && !p.startsWith('-'))`,
			Message: "timeZone must be an IANA time zone name such as Europe/Paris: parts of 1 to 14 letters, digits, '.', '_', '+' or '-', separated by '/'",
		}},
	}}
	return append(edits, jobSpecEdits("spec.jobTemplate.spec")...)
}

// maxSteps bounds the steps of a JobFlow, and of what one step depends on: far above any
// real flow, and low enough for the rules over them to be proven cheap.
const maxSteps = 32

// jobTemplateEdits are the edits to the JobTemplate CRD: its spec is a Job's and obeys the
// Job's rules, so that a template the API server takes makes a Job it takes.
func jobTemplateEdits() []edit {
	return append([]edit{{at: "", required: []string{"spec"}}}, jobSpecEdits("spec")...)
}

// jobFlowEdits are the edits to the JobFlow CRD: what Volcano's JobFlow webhook checks, short
// of a cycle longer than one step (CEL has no recursion; the controller tells it in an
// InvalidFlow Warning and makes no Job of the flow), and the length of the Jobs' names.
func jobFlowEdits() []edit {
	steps := "spec.flows"
	noTargets := `!has(f.dependsOn) || !has(f.dependsOn.targets)`
	return []edit{declareName, {
		at: "",
		rules: []rule{{
			Rule:      `!has(self.metadata.name) || !has(self.spec) || !has(self.spec.flows) || self.spec.flows.all(f, size(self.metadata.name) + 1 + size(f.name) <= 63)`,
			Message:   "a step's Job is named <jobflow>-<step> and must be at most 63 characters: shorten the JobFlow's or the step's name",
			FieldPath: ".metadata.name",
		}},
	}, {
		at:  steps,
		set: map[string]any{"maxItems": maxSteps},
		rules: []rule{{
			Rule:    `self.all(f, self.exists_one(g, g.name == f.name))`,
			Message: "step names must be unique within a JobFlow",
		}, {
			Rule:    `self.all(f, ` + noTargets + ` || f.dependsOn.targets.all(t, self.exists(g, g.name == t)))`,
			Message: "dependsOn.targets must name steps of the same JobFlow",
		}},
	}, {
		at:  steps + "[].name",
		set: map[string]any{"maxLength": 63},
	}, {
		at:  steps + "[].dependsOn.targets",
		set: map[string]any{"maxItems": maxSteps},
	}, {
		at:  steps + "[].dependsOn.targets[]",
		set: map[string]any{"maxLength": 63},
	}, {
		at: steps + "[]",
		rules: []rule{{
			Rule:    `!has(self.dependsOn) || !has(self.dependsOn.targets) || !(self.name in self.dependsOn.targets)`,
			Message: "a step cannot depend on itself",
		}},
	},
		{at: steps + "[].patch.jobSpec.tasks[].template", terse: true},
		{at: steps + "[].patch.jobSpec.volumes[].volumeClaim", terse: true},
	}
}

// jobSpecEdits are the edits to a JobSpec at path spec.
func jobSpecEdits(spec string) []edit {
	tasks := spec + ".tasks"
	volumes := spec + ".volumes"
	edits := []edit{
		{at: spec + ".schedulerName", set: map[string]any{"default": "volcano"}},
		{at: tasks + "[].maxRetry", set: map[string]any{"default": 3}},
		{at: tasks, set: map[string]any{"maxItems": maxTasks}},
		{at: volumes, set: map[string]any{"maxItems": maxVolumes}},
		{at: volumes + "[].mountPath", set: map[string]any{"maxLength": maxMountPathSize}},
		{at: tasks + "[].template", terse: true},
		{at: volumes + "[].volumeClaim", terse: true},
		// What every pod of a task copies: state.MaxTemplateMetadataEntries labels and as
		// many annotations at most (which also bounds the cost of the rule over them), and
		// state.MaxTemplateMetadataBytes of them together.
		{at: tasks + "[].template.metadata.labels", set: map[string]any{"maxProperties": state.MaxTemplateMetadataEntries}},
		{at: tasks + "[].template.metadata.annotations", set: map[string]any{"maxProperties": state.MaxTemplateMetadataEntries}},
		{at: tasks + "[].template.metadata", rules: []rule{templateBytesRule()}},
		{at: spec + ".plugins", set: map[string]any{"maxProperties": maxPlugins}, rules: []rule{{
			Rule:              `self.all(name, name in ` + celList(jobPlugins) + `)`,
			Message:           "unknown plugin: the job plugins are " + strings.Join(jobPlugins, ", "),
			MessageExpression: `'unknown plugin ' + self.filter(name, !(name in ` + celList(jobPlugins) + `))[0] + ': the job plugins are ` + strings.Join(jobPlugins, ", ") + `'`,
		}}},
		{at: spec + ".queue", rules: []rule{{
			Rule:    `self != 'root'`,
			Message: "a Job cannot be submitted to the root queue: name a leaf queue (spec.queue)",
		}}},
		{at: spec, rules: []rule{{
			Rule:    `has(self.tasks) && size(self.tasks) > 0`,
			Message: "a Job needs at least one task in spec.tasks",
		}, {
			Rule: `!has(self.minAvailable) || self.minAvailable <= ` +
				`(has(self.tasks) ? self.tasks.map(t, has(t.replicas) ? t.replicas : 0).sum() : 0)`,
			Message:   "minAvailable must not be greater than the total replicas of all tasks",
			FieldPath: ".minAvailable",
		}}},
		{at: spec, rules: []rule{replicaLimitRule()}},
		{at: tasks, rules: []rule{{
			Rule:    `self.all(t, !has(t.name) || self.exists_one(u, has(u.name) && u.name == t.name))`,
			Message: "task names must be unique within a Job",
		}}},
		{at: tasks + "[]", rules: []rule{{
			Rule:      `!has(self.minAvailable) || self.minAvailable <= (has(self.replicas) ? self.replicas : 0)`,
			Message:   "a task's minAvailable must not be greater than its replicas",
			FieldPath: ".minAvailable",
		}}},
		{at: volumes, rules: []rule{{
			Rule:    `self.all(v, self.exists_one(w, w.mountPath == v.mountPath))`,
			Message: "volume mountPaths must be unique within a Job",
		}}},
		{at: volumes + "[]", rules: []rule{{
			Rule:    `has(self.volumeClaim) || has(self.volumeClaimName) && size(self.volumeClaimName) > 0`,
			Message: "a volume needs volumeClaimName (an existing PVC) or volumeClaim (a PVC to create)",
		}}},
	}
	edits = append(edits, policyListEdits(spec+".policies")...)
	return append(edits, policyListEdits(tasks+"[].policies")...)
}

// replicaLimitRule refuses a Job spec whose tasks ask for more replicas than ringfire runs
// (state.ReplicaLimit: fewer with the plugins that list every replica's host), in the words the
// controller uses when a cluster without this rule lets one through (state.TooManyReplicas),
// short of the total: the API server estimates the string of a number as unbounded in size, and
// refuses a CRD whose message would print one.
func replicaLimitRule() rule {
	total := `(has(self.tasks) ? self.tasks.map(t, has(t.replicas) ? t.replicas : 0).sum() : 0)`
	// limit and message pick the first plugin the Job has, in the order ReplicaLimit looks.
	limit := fmt.Sprint(state.MaxReplicas)
	message := strconv.Quote(state.TooManyReplicasAtAdmission(state.MaxReplicas, ""))
	pick := func(name string, n int64) {
		has := `has(self.plugins) && '` + name + `' in self.plugins`
		limit = fmt.Sprintf("(%s ? %d : %s)", has, n, limit)
		message = fmt.Sprintf("(%s ? %s : %s)", has, strconv.Quote(state.TooManyReplicasAtAdmission(n, name)), message)
	}
	for i := len(state.ListingPlugins) - 1; i >= 0; i-- {
		pick(state.ListingPlugins[i], state.MaxReplicasListed)
	}
	for i := len(state.InPodPlugins) - 1; i >= 0; i-- {
		pick(state.InPodPlugins[i], state.MaxReplicasInPods)
	}
	return rule{
		Rule: total + ` <= ` + limit,
		Message: fmt.Sprintf("spec.tasks ask for more replicas than ringfire runs in one Job: at most %d, %d with the %s plugin, %d with %s "+
			"(docs/jobs.md, Limits)", state.MaxReplicas, state.MaxReplicasListed, strings.Join(state.ListingPlugins, ", "),
			state.MaxReplicasInPods, strings.Join(state.InPodPlugins, " or ")),
		MessageExpression: message,
		FieldPath:         ".tasks",
	}
}

// templateBytesRule refuses a pod template whose labels and annotations carry more than
// state.MaxTemplateMetadataBytes, keys and values together, in the controller's words
// (state.TemplateTooLarge) short of the template's path, which the API server's error names.
func templateBytesRule() rule {
	bytes := func(m string) string {
		return `(has(self.` + m + `) ? self.` + m + `.map(k, size(k) + size(self.` + m + `[k])).sum() : 0)`
	}
	return rule{
		Rule:    bytes("labels") + ` + ` + bytes("annotations") + ` <= ` + strconv.Itoa(state.MaxTemplateMetadataBytes),
		Message: state.TemplateTooLargeAtAdmission(),
	}
}

// policyListEdits are the edits to a list of LifecyclePolicy at path list. Volcano checks the
// Job's policies and each task's policies as separate lists, and so does ringfire.
func policyListEdits(list string) []edit {
	policy := list + "[]"
	hasEvents := `(has(self.event) || has(self.events) && size(self.events) > 0)`
	return []edit{
		{at: list, set: map[string]any{"maxItems": maxPolicies}},
		{at: policy + ".events", set: map[string]any{"maxItems": maxPolicyEvents}},
		// Setting the enum the types already have checks that events lists them all.
		{at: policy + ".event", set: map[string]any{"enum": toAny(events), "maxLength": maxEventLength}},
		{at: policy + ".events[]", set: map[string]any{"enum": toAny(events), "maxLength": maxEventLength}},
		{at: policy + ".action", set: map[string]any{"enum": toAny(policyActions)}},
		{at: policy, rules: []rule{{
			Rule:    `!(has(self.exitCode) && ` + hasEvents + `)`,
			Message: "a policy must not set both event/events and exitCode",
		}, {
			Rule:    `has(self.exitCode) || ` + hasEvents,
			Message: "a policy must set event, events or exitCode",
		}, {
			Rule:      `!has(self.exitCode) || self.exitCode != 0`,
			Message:   "exitCode 0 means success and cannot trigger a policy",
			FieldPath: ".exitCode",
		}, {
			Rule: fmt.Sprintf(`!(has(self.event) && self.event in %[1]s) && `+
				`!(has(self.events) && self.events.exists(e, e in %[1]s))`, celList(internalEvents)),
			Message: "events " + strings.Join(internalEvents, ", ") +
				" are internal to the controller and cannot be used in a policy",
		}, {
			Rule:    `has(self.action) || !` + hasEvents,
			Message: "a policy with events needs an action",
		}}},
		{at: list, rules: []rule{{
			// For each event rather than for each pair of policies: the cost grows with the
			// list's length, not with its square, which keeps task policies within budget.
			Rule:    celList(events) + `.all(x, self.filter(q, ` + policyNames("q", "x") + `).size() <= 1)`,
			Message: "an event must not appear in more than one policy of a list",
			// Naming the event costs one more pass; naming a task or an exit code would cost
			// more than the API server allows.
			MessageExpression: `'event ' + ` + celList(events) + `.filter(x, self.filter(q, ` + policyNames("q", "x") +
				`).size() > 1)[0] + ' appears in more than one policy of the list'`,
		}, {
			Rule:    `self.all(p, !has(p.exitCode) || self.exists_one(q, has(q.exitCode) && q.exitCode == p.exitCode))`,
			Message: "an exitCode must not appear in more than one policy of a list",
		}, {
			Rule: `!self.exists(p, ` + policyNames("p", `'*'`) + `) || ` +
				`self.all(p, (!has(p.event) || p.event == '*') && (!has(p.events) || p.events.all(e, e == '*')))`,
			Message: "event * (any event) must not be combined with other events in a list of policies",
		}}},
	}
}

// queueEdits are the edits to the Queue CRD: Volcano's mutating webhook makes a new queue
// reclaimable, and a Queue created without a spec still gets the defaults of its fields. Its
// validating webhook refuses a queue that names itself as its parent, resource quantities that
// are negative (or not whole for a resource counted in units), a guarantee above the deserved
// amount or a deserved amount above the capability, and a change to the root queue's
// resources. (What needs the other Queues is left to the admission policies beside the CRDs and
// to the Queue controller: see docs/jobs.md, "Admission policies".)
func queueEdits() []edit {
	edits := []edit{
		declareName,
		{at: "", rules: []rule{{
			Rule:      `!has(self.spec) || !has(self.spec.parent) || !has(self.metadata.name) || self.spec.parent != self.metadata.name`,
			Message:   "a queue cannot be its own parent: name another queue in spec.parent, or leave it empty for root",
			FieldPath: ".spec.parent",
		}, {
			// Volcano's --enable-root-queue-protection, on by default. (A transition rule: it
			// runs on updates only.)
			Rule: `!has(self.metadata.name) || self.metadata.name != 'root' || !has(self.spec) || !has(oldSelf.spec) || ` +
				sameResources("self.spec", "oldSelf.spec"),
			Message:   "root queue's resource attributes (capability, deserved, guarantee) cannot be modified",
			FieldPath: ".spec",
		}}},
		{at: "spec", set: map[string]any{"default": map[string]any{}}},
		{at: "spec.reclaimable", set: map[string]any{"default": true}},
		// The two rules below hold a queue's resources against each other; a queue stored before
		// them keeps its resources through an update that leaves them as they are (the Queue
		// controller writes spec.parent), as a rule over one field is kept by the API server.
		{at: "spec", rules: []rule{{
			Rule: `oldSelf.hasValue() && ` + sameResources("self", "oldSelf.value()") + ` || ` +
				`!has(self.guarantee) || !has(self.guarantee.resource) || self.guarantee.resource.all(k, ` + guaranteeFits + `)`,
			OptionalOldSelf: true,
			Message:         "deserved must name every resource of guarantee.resource, at least as much of it",
			MessageExpression: `self.guarantee.resource.filter(k, !(` + guaranteeFits + `)).map(k, 'deserved[' + k + ']' + ` +
				`(has(self.deserved) && k in self.deserved ? '=' + string(self.deserved[k]) : ' (missing)') + ` +
				`' must be >= guarantee[' + k + ']=' + string(self.guarantee.resource[k]))[0]`,
			FieldPath: ".deserved",
		}, {
			Rule: `oldSelf.hasValue() && ` + sameResources("self", "oldSelf.value()") + ` || ` +
				`!has(self.deserved) || !has(self.capability) || self.deserved.all(k, ` + deservedFits + `)`,
			OptionalOldSelf: true,
			Message:         "deserved must not exceed capability for any resource both name",
			MessageExpression: `self.deserved.filter(k, !(` + deservedFits + `)).map(k, 'deserved[' + k + ']=' + ` +
				`string(self.deserved[k]) + ' must be <= capability[' + k + ']=' + string(self.capability[k]))[0]`,
			FieldPath: ".deserved",
		}}},
	}
	for _, field := range []string{"capability", "deserved", "guarantee.resource"} {
		edits = append(edits, quantityMapEdit("spec."+field, field))
	}
	return edits
}

// maxQueueResources bounds the resources one of a queue's lists (capability, deserved,
// guarantee) names, so that the rules over them are cheap to prove.
const maxQueueResources = 64

// maxQuantityLength bounds a quantity written as a string ("500m", "64Gi").
const maxQuantityLength = 64

// guaranteeFits and deservedFits hold, in the rules at a queue's spec, for the resource k of
// guarantee.resource and of deserved.
const (
	guaranteeFits = `has(self.deserved) && k in self.deserved && ` +
		`quantity(string(self.deserved[k])).compareTo(quantity(string(self.guarantee.resource[k]))) >= 0`
	deservedFits = `!(k in self.capability) || ` +
		`quantity(string(self.deserved[k])).compareTo(quantity(string(self.capability[k]))) <= 0`
)

// integerResources are the resources Kubernetes counts in whole units, besides extended
// resources (a name with a domain outside kubernetes.io, nvidia.com/gpu): its validation of a
// quantity of one, which Volcano's webhook applies to a queue's, refuses a fraction.
var integerResources = []string{
	"pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
	"persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
}

// quantityMapEdit checks the quantities of a queue's resource list at path (named field in
// messages) as Kubernetes validates a resource quantity: not negative, and whole for a resource
// counted in units.
func quantityMapEdit(path, field string) edit {
	negative := `quantity(string(self[k])).isLessThan(quantity('0'))`
	integer := `k in ` + celList(integerResources) + ` || k.contains('/') && !k.contains('kubernetes.io/') && ` +
		`!k.startsWith('requests.') && k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')`
	fraction := `(` + integer + `) && !quantity(string(self[k])).isInteger()`
	return edit{at: path, set: map[string]any{"maxProperties": maxQueueResources}, values: map[string]any{"maxLength": maxQuantityLength}, rules: []rule{{
		Rule:              `!self.exists(k, ` + negative + `)`,
		Message:           field + ": resource quantities must be greater than or equal to 0",
		MessageExpression: `self.filter(k, ` + negative + `).map(k, '` + field + `[' + k + ']=' + string(self[k]) + ': must be greater than or equal to 0')[0]`,
	}, {
		Rule:              `!self.exists(k, ` + fraction + `)`,
		Message:           field + ": a resource counted in units (pods, extended resources such as nvidia.com/gpu) must be a whole number",
		MessageExpression: `self.filter(k, ` + fraction + `).map(k, '` + field + `[' + k + ']=' + string(self[k]) + ': must be an integer')[0]`,
	}}}
}

// sameResources is a CEL expression that is true when the queue specs spec and old have the same
// capability, deserved and guarantee.resource (absent and empty alike).
func sameResources(spec, old string) string {
	value := func(obj, path string) string {
		parts := strings.Split(path, ".")
		var checks []string
		for i := range parts {
			checks = append(checks, fmt.Sprintf("has(%s.%s)", obj, strings.Join(parts[:i+1], ".")))
		}
		return fmt.Sprintf("(%s ? %s.%s : {})", strings.Join(checks, " && "), obj, path)
	}
	var same []string
	for _, path := range []string{"capability", "deserved", "guarantee.resource"} {
		same = append(same, value(spec, path)+" == "+value(old, path))
	}
	return "(" + strings.Join(same, " && ") + ")"
}

// podGroupEdits are the edits to the PodGroup CRD: a PodGroup created without a spec still
// gets the default queue.
func podGroupEdits() []edit {
	return []edit{{at: "spec", set: map[string]any{"default": map[string]any{}}}, {
		// The gang of a Job is at most a Job's replicas; a PodGroup written by hand is held to
		// the same, so that no number a user writes sizes what the scheduler holds.
		at: "spec.minMember",
		rules: []rule{{
			Rule: fmt.Sprintf("self <= %d", state.MaxReplicas),
			// No messageExpression: the API server refuses a CRD whose message prints a number.
			Message: fmt.Sprintf("minMember must be at most %d: ringfire runs at most %d pods in one gang (docs/jobs.md, Limits)", state.MaxReplicas, state.MaxReplicas),
		}},
	}}
}

// commandEdits are the edits to the Command CRD: a Command must name an action ringfire knows.
func commandEdits() []edit {
	return []edit{
		{at: "", required: []string{"action"}},
		{at: "action", set: map[string]any{"enum": toAny(commandActions)}},
	}
}

// policyNames is a CEL expression that is true when policy q names the event x, through
// event or events.
func policyNames(q, x string) string {
	return fmt.Sprintf(`(has(%[1]s.event) && %[1]s.event == %[2]s || has(%[1]s.events) && %[2]s in %[1]s.events)`, q, x)
}

// celList writes words as a CEL list of strings.
func celList(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = "'" + w + "'"
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

func toAny(words []string) []any {
	list := make([]any, len(words))
	for i, w := range words {
		list[i] = w
	}
	return list
}
