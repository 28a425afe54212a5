package crds_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	busv1alpha1 "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	flowv1alpha1 "volcano.sh/apis/pkg/apis/flow/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/controllers/job/state"
	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
)

const namespace = "default"

// TestManifestsFitKubectlApply checks that `kubectl apply` (client-side) can install every
// manifest: it stores the object as JSON in an annotation limited to 256 KiB.
func TestManifestsFitKubectlApply(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	files = slices.DeleteFunc(files, func(f string) bool { return f == "kustomization.yaml" })
	if err != nil || len(files) != 35 {
		t.Fatalf("want 8 CRDs, the default and root Queues, and 12 admission policies with their 13 bindings, found %v (%v)", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		asJSON, err := yaml.YAMLToJSON(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if n := len(asJSON); n > 256<<10 {
			t.Errorf("%s is %d KiB as JSON, over the 256 KiB of kubectl's last-applied annotation", f, n>>10)
		}
	}
}

// TestInstallRefusesWhatVolcanoRefuses installs the CRDs into a real API server and checks
// that it applies the defaults Volcano's mutating webhook would, and refuses each kind of Job
// Volcano's validating webhook refuses, with a clear message.
func TestInstallRefusesWhatVolcanoRefuses(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{Nodes: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	start := time.Now()
	if err := crds.Install(ctx, c.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	t.Logf("installed the CRDs in %v", time.Since(start).Round(time.Millisecond))
	if err := crds.Install(ctx, c.RESTConfig()); err != nil {
		t.Fatalf("second install: %v", err)
	}
	vc, err := versioned.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}

	t.Run("short names", func(t *testing.T) {
		checkShortNames(t, c, "batch.volcano.sh/v1alpha1", "jobs", "vcjob", "vj")
		checkShortNames(t, c, "scheduling.volcano.sh/v1beta1", "podgroups", "pg", "podgroup-v1beta1")
		checkShortNames(t, c, "scheduling.volcano.sh/v1beta1", "queues", "q", "queue-v1beta1")
		checkShortNames(t, c, "topology.volcano.sh/v1alpha1", "hypernodes", "hn")
	})

	t.Run("default queue", func(t *testing.T) {
		q, err := vc.SchedulingV1beta1().Queues().Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if q.Spec.Weight != 1 || q.Spec.Reclaimable == nil || !*q.Spec.Reclaimable {
			t.Errorf("default queue: weight %d, reclaimable %v; want 1, true", q.Spec.Weight, q.Spec.Reclaimable)
		}
	})

	t.Run("job defaults", func(t *testing.T) {
		job, err := vc.BatchV1alpha1().Jobs(namespace).Create(ctx, validJob("valid"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("a valid Job is refused: %v", err)
		}
		if job.Spec.Queue != "default" || job.Spec.MaxRetry != 3 || job.Spec.SchedulerName != "volcano" {
			t.Errorf("defaults: queue %q, maxRetry %d, schedulerName %q; want default, 3, volcano",
				job.Spec.Queue, job.Spec.MaxRetry, job.Spec.SchedulerName)
		}
		for _, task := range job.Spec.Tasks {
			if task.MaxRetry != 3 {
				t.Errorf("task %s: maxRetry %d, want 3", task.Name, task.MaxRetry)
			}
		}
	})

	t.Run("bad jobs", func(t *testing.T) {
		for _, tc := range badJobs() {
			t.Run(tc.name, func(t *testing.T) {
				job := validJob("bad")
				tc.change(job)
				_, err := vc.BatchV1alpha1().Jobs(namespace).Create(ctx, job, metav1.CreateOptions{})
				checkInvalid(t, err, tc.want)
			})
		}
	})

	t.Run("jobs at the replica limits", func(t *testing.T) {
		for name, tc := range map[string]struct {
			replicas int32
			plugins  map[string][]string
		}{
			"at-limit":            {state.MaxReplicas - 1, nil},
			"at-limit-svc":        {state.MaxReplicasListed - 1, map[string][]string{"svc": {}}},
			"at-limit-tensorflow": {state.MaxReplicasInPods - 1, map[string][]string{"tensorflow": {}}},
		} {
			job := validJob(name)
			job.Spec.Tasks[1].Replicas, job.Spec.Plugins = tc.replicas, tc.plugins // with the master's 1, at the limit
			if _, err := vc.BatchV1alpha1().Jobs(namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
				t.Errorf("%s: a Job at the limit is refused: %v", name, err)
			}
		}
	})

	t.Run("template metadata", func(t *testing.T) {
		entries := func(n, size int) map[string]string {
			m := map[string]string{}
			for i := range n {
				k := fmt.Sprintf("example.com/k%05d", i)
				m[k] = strings.Repeat("v", max(size-len(k), 0))
			}
			return m
		}
		per := state.MaxTemplateMetadataBytes / (2 * state.MaxTemplateMetadataEntries)
		for _, tc := range []struct {
			name                string
			labels, annotations map[string]string
			want                string // part of the refusal; "" to be accepted
		}{
			{"at the limits", entries(state.MaxTemplateMetadataEntries, 63+17), entries(state.MaxTemplateMetadataEntries, per*2-80), ""},
			{"256 bytes over", entries(state.MaxTemplateMetadataEntries, 63+17), entries(state.MaxTemplateMetadataEntries, per*2-80+1),
				"spec.tasks[1].template.metadata: Invalid value: " + state.TemplateTooLargeAtAdmission()},
			{"one annotation of 100 KiB", nil, entries(1, 100<<10), "carry more than 65536 bytes"},
			{"257 labels", entries(state.MaxTemplateMetadataEntries+1, 20), nil,
				"spec.tasks[1].template.metadata.labels: Too many: 257: must have at most 256 items"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				job := validJob("labelled")
				job.Spec.Tasks[1].Template.Labels, job.Spec.Tasks[1].Template.Annotations = tc.labels, tc.annotations
				_, err := vc.BatchV1alpha1().Jobs(namespace).Create(ctx, job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				checkInvalid(t, err, tc.want)
			})
		}
		cron := validCronJob("labelled")
		cron.Spec.JobTemplate.Spec.Tasks[1].Template.Annotations = entries(1, 100<<10)
		_, err := vc.BatchV1alpha1().CronJobs(namespace).Create(ctx, cron, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		checkInvalid(t, err, "carry more than 65536 bytes")
		tmpl := &flowv1alpha1.JobTemplate{ObjectMeta: metav1.ObjectMeta{Name: "labelled"}, Spec: validJob("").Spec}
		tmpl.Spec.Tasks[1].Template.Labels = entries(state.MaxTemplateMetadataEntries+1, 20)
		_, err = vc.FlowV1alpha1().JobTemplates(namespace).Create(ctx, tmpl, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		checkInvalid(t, err, "must have at most 256 items")
	})

	t.Run("job template", func(t *testing.T) {
		tmpl := &flowv1alpha1.JobTemplate{ObjectMeta: metav1.ObjectMeta{Name: "huge"}, Spec: validJob("").Spec}
		tmpl.Spec.Tasks[1].Replicas = 100000
		_, err := vc.FlowV1alpha1().JobTemplates(namespace).Create(ctx, tmpl, metav1.CreateOptions{})
		checkInvalid(t, err, "spec.tasks ask for more than 10000 replicas in all; ringfire runs at most 10000 per Job")
	})

	t.Run("podgroup minMember", func(t *testing.T) {
		pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "gang"}}
		pg.Spec.MinMember = math.MaxInt32
		_, err := vc.SchedulingV1beta1().PodGroups(namespace).Create(ctx, pg, metav1.CreateOptions{})
		checkInvalid(t, err, "spec.minMember: Invalid value: 2147483647: minMember must be at most 10000: ringfire runs at most 10000 pods in one gang (docs/jobs.md, Limits)")
		pg.Spec.MinMember = state.MaxReplicas
		if _, err := vc.SchedulingV1beta1().PodGroups(namespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			t.Errorf("a PodGroup at the limit is refused: %v", err)
		}
	})

	t.Run("cron job", func(t *testing.T) {
		cron := validCronJob("nightly")
		created, err := vc.BatchV1alpha1().CronJobs(namespace).Create(ctx, cron, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("a valid CronJob is refused: %v", err)
		}
		if spec := created.Spec.JobTemplate.Spec; spec.Queue != "default" || spec.SchedulerName != "volcano" {
			t.Errorf("job template defaults: queue %q, schedulerName %q", spec.Queue, spec.SchedulerName)
		}

		bad := validCronJob("bad-nightly")
		bad.Spec.JobTemplate.Spec.Tasks[1].Name = "master"
		_, err = vc.BatchV1alpha1().CronJobs(namespace).Create(ctx, bad, metav1.CreateOptions{})
		checkInvalid(t, err, "task names must be unique within a Job")

		huge := validCronJob("huge-nightly")
		huge.Spec.JobTemplate.Spec.Tasks[1].Replicas = math.MaxInt32
		_, err = vc.BatchV1alpha1().CronJobs(namespace).Create(ctx, huge, metav1.CreateOptions{})
		checkInvalid(t, err, "spec.tasks ask for more than 10000 replicas in all; ringfire runs at most 10000 per Job")

		long := validCronJob(strings.Repeat("n", 53))
		_, err = vc.BatchV1alpha1().CronJobs(namespace).Create(ctx, long, metav1.CreateOptions{})
		checkInvalid(t, err, "a CronJob name must be at most 52 characters")

		for _, tc := range []struct{ schedule, timeZone, want string }{
			{"CRON_TZ=Europe/Paris 0 3 * * *", "", "cannot use TZ or CRON_TZ in schedule, use spec.timeZone instead"},
			{"0 3 * * *", "-", "timeZone must be an IANA time zone name"},
			{"0 3 * * *", "Local", "not empty or Local"},
			{"0 3 * * *", "Europe/../Paris", "parts of 1 to 14 letters"},
			{"0 3 * * *", "America/Averyveryverylongname", "parts of 1 to 14 letters"},
		} {
			bad := validCronJob("zoned")
			bad.Spec.Schedule = tc.schedule
			if tc.timeZone != "" {
				bad.Spec.TimeZone = &tc.timeZone
			}
			_, err = vc.BatchV1alpha1().CronJobs(namespace).Create(ctx, bad, metav1.CreateOptions{})
			checkInvalid(t, err, tc.want)
		}
		zoned := validCronJob("zoned")
		zone := "America/Argentina/Buenos_Aires"
		zoned.Spec.TimeZone = &zone
		if _, err := vc.BatchV1alpha1().CronJobs(namespace).Create(ctx, zoned, metav1.CreateOptions{}); err != nil {
			t.Errorf("a CronJob in %s is refused: %v", zone, err)
		}
	})

	t.Run("command", func(t *testing.T) {
		cmd := &busv1alpha1.Command{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "valid-abort-"},
			Action:     string(busv1alpha1.AbortJobAction),
			TargetObject: &metav1.OwnerReference{
				APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "valid", UID: "0",
			},
		}
		if _, err := vc.BusV1alpha1().Commands(namespace).Create(ctx, cmd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("a valid Command is refused: %v", err)
		}
		cmd.Action = "Explode"
		_, err := vc.BusV1alpha1().Commands(namespace).Create(ctx, cmd, metav1.CreateOptions{})
		checkInvalid(t, err, `action: Unsupported value: "Explode"`)
		cmd.Action = ""
		_, err = vc.BusV1alpha1().Commands(namespace).Create(ctx, cmd, metav1.CreateOptions{})
		checkInvalid(t, err, "action: Required value")
	})

	t.Run("queue and podgroup defaults", func(t *testing.T) {
		q, err := vc.SchedulingV1beta1().Queues().Create(ctx,
			&schedulingv1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if q.Spec.Weight != 1 || q.Spec.Reclaimable == nil || !*q.Spec.Reclaimable {
			t.Errorf("new queue: weight %d, reclaimable %v; want 1, true", q.Spec.Weight, q.Spec.Reclaimable)
		}
		q.Name, q.ResourceVersion, q.Spec.Weight = "heavy", "", -1
		_, err = vc.SchedulingV1beta1().Queues().Create(ctx, q, metav1.CreateOptions{})
		checkInvalid(t, err, "spec.weight: Invalid value: -1")

		// Written as YAML without a spec (the typed client always sends one).
		dc := dynamic.NewForConfigOrDie(c.RESTConfig())
		bare := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
			"metadata": map[string]any{"name": "bare"},
		}}
		created, err := dc.Resource(schedulingv1beta1.SchemeGroupVersion.WithResource("queues")).
			Create(ctx, bare, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		weight, _, _ := unstructured.NestedInt64(created.Object, "spec", "weight")
		reclaimable, _, _ := unstructured.NestedBool(created.Object, "spec", "reclaimable")
		if weight != 1 || !reclaimable {
			t.Errorf("queue without spec: weight %d, reclaimable %v; want 1, true", weight, reclaimable)
		}

		pg, err := vc.SchedulingV1beta1().PodGroups(namespace).Create(ctx,
			&schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pg.Spec.Queue != "default" {
			t.Errorf("new podgroup: queue %q, want default", pg.Spec.Queue)
		}
	})
}

// A badJob is one kind of Job Volcano's validating webhook refuses: change turns a valid Job
// into it, and want is part of the message the API server must refuse it with.
type badJob struct {
	name   string
	change func(*batchv1alpha1.Job)
	want   string
}

func badJobs() []badJob {
	policies := func(p ...batchv1alpha1.LifecyclePolicy) func(*batchv1alpha1.Job) {
		return func(j *batchv1alpha1.Job) { j.Spec.Policies = p }
	}
	taskPolicies := func(p ...batchv1alpha1.LifecyclePolicy) func(*batchv1alpha1.Job) {
		return func(j *batchv1alpha1.Job) { j.Spec.Tasks[1].Policies = p }
	}
	on := func(action busv1alpha1.Action, events ...busv1alpha1.Event) batchv1alpha1.LifecyclePolicy {
		return batchv1alpha1.LifecyclePolicy{Events: events, Action: action}
	}
	onExit := func(action busv1alpha1.Action, code int32) batchv1alpha1.LifecyclePolicy {
		return batchv1alpha1.LifecyclePolicy{ExitCode: ptr.To(code), Action: action}
	}
	const (
		restart  = busv1alpha1.RestartJobAction
		abort    = busv1alpha1.AbortJobAction
		failed   = busv1alpha1.PodFailedEvent
		evicted  = busv1alpha1.PodEvictedEvent
		anyEvent = busv1alpha1.AnyEvent
	)
	return []badJob{
		{"policy with event and exitCode",
			policies(batchv1alpha1.LifecyclePolicy{Event: failed, ExitCode: ptr.To[int32](3), Action: restart}),
			"a policy must not set both event/events and exitCode"},
		{"task policy with events and exitCode",
			taskPolicies(batchv1alpha1.LifecyclePolicy{Events: []busv1alpha1.Event{failed}, ExitCode: ptr.To[int32](3), Action: restart}),
			"a policy must not set both event/events and exitCode"},
		{"policy with neither event nor exitCode",
			policies(batchv1alpha1.LifecyclePolicy{Action: restart}),
			"a policy must set event, events or exitCode"},
		{"exitCode 0",
			policies(onExit(restart, 0)),
			"exitCode 0 means success and cannot trigger a policy"},
		{"event in two policies",
			policies(batchv1alpha1.LifecyclePolicy{Event: failed, Action: restart}, on(abort, evicted, failed)),
			"event PodFailed appears in more than one policy of the list"},
		{"event in two task policies",
			taskPolicies(on(restart, failed), on(abort, failed)),
			"event PodFailed appears in more than one policy of the list"},
		{"exitCode in two policies",
			policies(onExit(restart, 3), onExit(abort, 3)),
			"an exitCode must not appear in more than one policy of a list"},
		{"* with another event in one policy",
			policies(on(restart, anyEvent, failed)),
			"event * (any event) must not be combined with other events"},
		{"* with another policy",
			taskPolicies(on(restart, anyEvent), on(abort, evicted)),
			"event * (any event) must not be combined with other events"},
		{"internal event OutOfSync",
			policies(on(restart, busv1alpha1.OutOfSyncEvent)),
			"are internal to the controller and cannot be used in a policy"},
		{"internal event CommandIssued",
			policies(batchv1alpha1.LifecyclePolicy{Event: busv1alpha1.CommandIssuedEvent, Action: restart}),
			"are internal to the controller and cannot be used in a policy"},
		{"internal event PodRunning",
			taskPolicies(on(restart, busv1alpha1.PodRunningEvent)),
			"are internal to the controller and cannot be used in a policy"},
		{"policy with events but no action",
			policies(on("", failed)),
			"a policy with events needs an action"},
		{"unknown policy action",
			policies(on("Explode", failed)),
			`action: Unsupported value: "Explode"`},
		{"duplicate task names",
			func(j *batchv1alpha1.Job) { j.Spec.Tasks[1].Name = j.Spec.Tasks[0].Name },
			"task names must be unique within a Job"},
		{"minAvailable greater than total replicas",
			func(j *batchv1alpha1.Job) { j.Spec.MinAvailable = 4 },
			"spec.minAvailable: Invalid value: minAvailable must not be greater than the total replicas of all tasks"},
		{"no tasks",
			func(j *batchv1alpha1.Job) { j.Spec.Tasks = nil },
			"a Job needs at least one task in spec.tasks"},
		{"unknown plugin",
			func(j *batchv1alpha1.Job) { j.Spec.Plugins = map[string][]string{"svc": {}, "sshh": {"--port=22"}} },
			"unknown plugin sshh: the job plugins are env, svc, ssh, mpi, pytorch, tensorflow, ray, hcclrank"},
		{"root queue",
			func(j *batchv1alpha1.Job) { j.Spec.Queue = "root" },
			"a Job cannot be submitted to the root queue"},
		{"negative replicas",
			func(j *batchv1alpha1.Job) { j.Spec.Tasks[0].Replicas = -1 },
			"spec.tasks[0].replicas: Invalid value: -1: spec.tasks[0].replicas in body should be greater than or equal to 0"},
		{"negative minAvailable",
			func(j *batchv1alpha1.Job) { j.Spec.MinAvailable = -1 },
			"spec.minAvailable: Invalid value: -1: spec.minAvailable in body should be greater than or equal to 0"},
		{"negative task minAvailable",
			func(j *batchv1alpha1.Job) { j.Spec.Tasks[1].MinAvailable = ptr.To[int32](-1) },
			"spec.tasks[1].minAvailable: Invalid value: -1: spec.tasks[1].minAvailable in body should be greater than or equal to 0"},
		{"task minAvailable greater than replicas",
			func(j *batchv1alpha1.Job) { j.Spec.Tasks[1].MinAvailable = ptr.To[int32](3) },
			"spec.tasks[1].minAvailable: Invalid value: a task's minAvailable must not be greater than its replicas"},
		{"negative maxRetry",
			func(j *batchv1alpha1.Job) { j.Spec.MaxRetry = -1 },
			"spec.maxRetry: Invalid value: -1: spec.maxRetry in body should be greater than or equal to 0"},
		{"negative ttlSecondsAfterFinished",
			func(j *batchv1alpha1.Job) { j.Spec.TTLSecondsAfterFinished = ptr.To[int32](-1) },
			"spec.ttlSecondsAfterFinished: Invalid value: -1: spec.ttlSecondsAfterFinished in body should be greater than or equal to 0"},
		{"name longer than a label value",
			func(j *batchv1alpha1.Job) { j.Name = strings.Repeat("j", 64) },
			"a Job name must be at most 63 characters"},
		{"replicas beyond the limit",
			func(j *batchv1alpha1.Job) { j.Spec.Tasks[1].Replicas = math.MaxInt32 },
			"spec.tasks ask for more than 10000 replicas in all; ringfire runs at most 10000 per Job: " +
				"lower the replicas, or split the work into several Jobs (docs/jobs.md, Limits)"},
		{"replicas beyond the limit across tasks",
			func(j *batchv1alpha1.Job) { j.Spec.Tasks[1].Replicas = 10000 },
			"spec.tasks ask for more than 10000 replicas in all; ringfire runs at most 10000 per Job"},
		{"replicas beyond the limit of a plugin that lists every host",
			func(j *batchv1alpha1.Job) {
				j.Spec.Tasks[1].Replicas = 4096
				j.Spec.Plugins = map[string][]string{"svc": {}, "env": {}}
			},
			"spec.tasks ask for more than 4096 replicas in all; the svc plugin lists every replica's host in one object of at most 1 MiB, " +
				"so ringfire runs at most 4096 per Job"},
		{"replicas beyond the limit of a plugin that writes every host into pods",
			func(j *batchv1alpha1.Job) {
				j.Spec.Tasks[1].Replicas = 1024
				j.Spec.Plugins = map[string][]string{"svc": {}, "tensorflow": {}}
			},
			"spec.tasks ask for more than 1024 replicas in all; the tensorflow plugin writes every replica's host into pods, " +
				"so ringfire runs at most 1024 per Job"},
		{"two volumes on one mountPath",
			func(j *batchv1alpha1.Job) {
				j.Spec.Volumes = []batchv1alpha1.VolumeSpec{
					{MountPath: "/data", VolumeClaimName: "a"}, {MountPath: "/data", VolumeClaimName: "b"},
				}
			},
			"volume mountPaths must be unique within a Job"},
		{"volume without a claim",
			func(j *batchv1alpha1.Job) { j.Spec.Volumes = []batchv1alpha1.VolumeSpec{{MountPath: "/data"}} },
			"a volume needs volumeClaimName (an existing PVC) or volumeClaim (a PVC to create)"},
	}
}

// validJob is a Job Volcano accepts: two tasks, job and task policies, no defaulted fields set.
func validJob(name string) *batchv1alpha1.Job {
	return &batchv1alpha1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1alpha1.JobSpec{
			MinAvailable: 3,
			Tasks:        []batchv1alpha1.TaskSpec{task("master", 1), task("worker", 2)},
			Policies: []batchv1alpha1.LifecyclePolicy{
				{Event: busv1alpha1.PodEvictedEvent, Action: busv1alpha1.RestartJobAction},
				{ExitCode: ptr.To[int32](3), Action: busv1alpha1.AbortJobAction},
				{ExitCode: ptr.To[int32](4), Action: busv1alpha1.TerminateJobAction},
			},
		},
	}
}

func task(name string, replicas int32) batchv1alpha1.TaskSpec {
	return batchv1alpha1.TaskSpec{
		Name:     name,
		Replicas: replicas,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "busybox"}},
		}},
		Policies: []batchv1alpha1.LifecyclePolicy{
			{Events: []busv1alpha1.Event{busv1alpha1.PodFailedEvent, busv1alpha1.PodPendingEvent},
				Action: busv1alpha1.RestartTaskAction, Timeout: &metav1.Duration{Duration: time.Minute}},
			{Event: busv1alpha1.TaskCompletedEvent, Action: busv1alpha1.CompleteJobAction},
		},
	}
}

func validCronJob(name string) *batchv1alpha1.CronJob {
	return &batchv1alpha1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1alpha1.CronJobSpec{
			Schedule:    "0 3 * * *",
			JobTemplate: batchv1alpha1.JobTemplateSpec{Spec: validJob("").Spec},
		},
	}
}

// checkInvalid fails the test unless err is an Invalid error whose message contains want.
func checkInvalid(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("accepted; want refused with %q", want)
	case !apierrors.IsInvalid(err):
		t.Errorf("refused with %v; want an Invalid error", err)
	case !strings.Contains(err.Error(), want):
		t.Errorf("refused with %q; want a message containing %q", err, want)
	default:
		t.Logf("refused: %v", err)
	}
}

func checkShortNames(t *testing.T, c *cluster.Cluster, groupVersion, resource string, want ...string) {
	t.Helper()
	list, err := c.Clientset().Discovery().ServerResourcesForGroupVersion(groupVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			if !slices.Equal(r.ShortNames, want) {
				t.Errorf("%s short names %v, want %v", resource, r.ShortNames, want)
			}
			return
		}
	}
	got, _ := json.Marshal(list.APIResources)
	t.Errorf("%s not served in %s: %s", resource, groupVersion, got)
}
