package state

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

func TestDefaultsFillsWhatVolcanosWebhookFills(t *testing.T) {
	job := &batch.Job{Spec: batch.JobSpec{
		Tasks: []batch.TaskSpec{
			{Replicas: 2},
			{Name: "ps", Replicas: 3, MinAvailable: i32(1), MaxRetry: 5,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{HostNetwork: true}}},
		},
		Plugins: map[string][]string{"mpi": {"--port=22"}},
	}}
	set := Defaults(job)

	wantSet := []string{
		"spec.queue", "spec.schedulerName", "spec.maxRetry",
		"spec.tasks[0].name", "spec.tasks[0].minAvailable", "spec.tasks[0].maxRetry",
		"spec.tasks[1].template.spec.dnsPolicy",
		"spec.minAvailable",
		"spec.plugins.svc", "spec.plugins.ssh",
	}
	if !reflect.DeepEqual(set, wantSet) {
		t.Errorf("Defaults set\n %v\nwant\n %v", set, wantSet)
	}
	s := job.Spec
	if s.Queue != "default" || s.SchedulerName != "volcano" || s.MaxRetry != 3 {
		t.Errorf("queue %q, schedulerName %q, maxRetry %d; want default, volcano, 3", s.Queue, s.SchedulerName, s.MaxRetry)
	}
	if s.Tasks[0].Name != "default0" || *s.Tasks[0].MinAvailable != 2 || s.Tasks[0].MaxRetry != 3 {
		t.Errorf("task 0: name %q, minAvailable %d, maxRetry %d; want default0, 2 (its replicas), 3",
			s.Tasks[0].Name, *s.Tasks[0].MinAvailable, s.Tasks[0].MaxRetry)
	}
	if s.Tasks[1].Name != "ps" || *s.Tasks[1].MinAvailable != 1 || s.Tasks[1].MaxRetry != 5 {
		t.Errorf("task 1 was changed: %+v", s.Tasks[1])
	}
	if s.Tasks[1].Template.Spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("host-network task dnsPolicy %q, want ClusterFirstWithHostNet", s.Tasks[1].Template.Spec.DNSPolicy)
	}
	// Sum of the task minAvailable after defaulting (2 + 1), not of the replicas (2 + 3).
	if s.MinAvailable != 3 {
		t.Errorf("minAvailable %d, want 3", s.MinAvailable)
	}
	if got := s.Plugins["mpi"]; !reflect.DeepEqual(got, []string{"--port=22"}) {
		t.Errorf("mpi plugin arguments changed to %v", got)
	}

	if again := Defaults(job); len(again) != 0 {
		t.Errorf("second Defaults set %v; want nothing (idempotent)", again)
	}
}

func TestDefaultsRows(t *testing.T) {
	rows := []struct {
		name string
		job  batch.JobSpec
		want []string
	}{
		{"a complete job is left alone", batch.JobSpec{
			Queue: "q", SchedulerName: "other", MaxRetry: 1, MinAvailable: 1,
			Tasks: []batch.TaskSpec{{Name: "t", Replicas: 1, MinAvailable: i32(1), MaxRetry: 1}},
		}, nil},
		{"maxRetry is defaulted only when 0", batch.JobSpec{
			Queue: "q", SchedulerName: "s", MaxRetry: 7, MinAvailable: 1,
			Tasks: []batch.TaskSpec{{Name: "t", Replicas: 1, MinAvailable: i32(1), MaxRetry: 7}},
		}, nil},
		{"minAvailable of a job without replicas stays 0", batch.JobSpec{
			Queue: "q", SchedulerName: "s", MaxRetry: 1,
			Tasks: []batch.TaskSpec{{Name: "t", Replicas: 0, MinAvailable: i32(0), MaxRetry: 1}},
		}, nil},
		{"a task minAvailable of 0 is kept (only nil is defaulted)", batch.JobSpec{
			Queue: "q", SchedulerName: "s", MaxRetry: 1, MinAvailable: 2,
			Tasks: []batch.TaskSpec{{Name: "t", Replicas: 2, MinAvailable: i32(0), MaxRetry: 1}},
		}, nil},
		{"tensorflow needs svc", batch.JobSpec{
			Queue: "q", SchedulerName: "s", MaxRetry: 1, MinAvailable: 1,
			Tasks:   []batch.TaskSpec{{Name: "t", Replicas: 1, MinAvailable: i32(1), MaxRetry: 1}},
			Plugins: map[string][]string{"tensorflow": nil},
		}, []string{"spec.plugins.svc"}},
		{"pytorch needs svc", batch.JobSpec{
			Queue: "q", SchedulerName: "s", MaxRetry: 1, MinAvailable: 1,
			Tasks:   []batch.TaskSpec{{Name: "t", Replicas: 1, MinAvailable: i32(1), MaxRetry: 1}},
			Plugins: map[string][]string{"pytorch": nil},
		}, []string{"spec.plugins.svc"}},
		{"svc already there is kept", batch.JobSpec{
			Queue: "q", SchedulerName: "s", MaxRetry: 1, MinAvailable: 1,
			Tasks:   []batch.TaskSpec{{Name: "t", Replicas: 1, MinAvailable: i32(1), MaxRetry: 1}},
			Plugins: map[string][]string{"tensorflow": nil, "svc": {"--disable-network-policy=true"}},
		}, nil},
		{"env alone needs nothing", batch.JobSpec{
			Queue: "q", SchedulerName: "s", MaxRetry: 1, MinAvailable: 1,
			Tasks:   []batch.TaskSpec{{Name: "t", Replicas: 1, MinAvailable: i32(1), MaxRetry: 1}},
			Plugins: map[string][]string{"env": nil},
		}, nil},
		{"host network with a DNS policy set is left alone", batch.JobSpec{
			Queue: "q", SchedulerName: "s", MaxRetry: 1, MinAvailable: 1,
			Tasks: []batch.TaskSpec{{Name: "t", Replicas: 1, MinAvailable: i32(1), MaxRetry: 1,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{HostNetwork: true, DNSPolicy: corev1.DNSDefault}}}},
		}, nil},
		{"unnamed tasks are named by index", batch.JobSpec{
			Queue: "q", SchedulerName: "s", MaxRetry: 1, MinAvailable: 2,
			Tasks: []batch.TaskSpec{
				{Name: "a", Replicas: 1, MinAvailable: i32(1), MaxRetry: 1},
				{Replicas: 1, MinAvailable: i32(1), MaxRetry: 1},
			},
		}, []string{"spec.tasks[1].name"}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			job := &batch.Job{Spec: row.job}
			before := job.DeepCopy()
			got := Defaults(job)
			if !reflect.DeepEqual(got, row.want) {
				t.Errorf("Defaults set %v, want %v", got, row.want)
			}
			if len(got) == 0 && !reflect.DeepEqual(job, before) {
				t.Errorf("Defaults reported nothing but changed the job")
			}
		})
	}
	// The name of a defaulted task follows Volcano's "default<index>".
	job := &batch.Job{Spec: batch.JobSpec{Tasks: []batch.TaskSpec{{Name: "a"}, {}}}}
	Defaults(job)
	if job.Spec.Tasks[1].Name != "default1" {
		t.Errorf("task 1 named %q, want default1", job.Spec.Tasks[1].Name)
	}
}
