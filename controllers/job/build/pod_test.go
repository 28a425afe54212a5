package build

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

func TestPodMetadata(t *testing.T) {
	job := testJob()
	job.Spec.Tasks[1].Template.Labels = map[string]string{"app": "x", SlotLabel: "999"}
	job.Spec.Tasks[1].Template.Annotations = map[string]string{"note": "kept"}
	pod := Pod(job, &job.Spec.Tasks[1], 2, 17)

	if pod.Name != "train-worker-2" || pod.Namespace != "ns" {
		t.Errorf("pod %s/%s, want ns/train-worker-2", pod.Namespace, pod.Name)
	}
	if len(pod.OwnerReferences) != 1 || !equality.Semantic.DeepEqual(pod.OwnerReferences[0], OwnerReference(job)) {
		t.Errorf("owner references %+v", pod.OwnerReferences)
	}
	wantAnnotations := map[string]string{
		"note":                         "kept",
		"volcano.sh/task-index":        "2",
		"volcano.sh/task-spec":         "worker",
		"scheduling.k8s.io/group-name": "train-u-1",
		"volcano.sh/job-name":          "train",
		"volcano.sh/queue-name":        "q1",
		"volcano.sh/job-version":       "2",
		"volcano.sh/template-uid":      "train-worker",
		"volcano.sh/job-retry-count":   "1",
	}
	if !maps.Equal(pod.Annotations, wantAnnotations) {
		t.Errorf("annotations:\n got  %v\n want %v", pod.Annotations, wantAnnotations)
	}
	wantLabels := map[string]string{
		"app":                      "x",
		"volcano.sh/task-index":    "2",
		"volcano.sh/job-name":      "train",
		"volcano.sh/task-spec":     "worker",
		"volcano.sh/job-namespace": "ns",
		"volcano.sh/queue-name":    "q1",
		"ringfire.io/slot":         "17",
	}
	if !maps.Equal(pod.Labels, wantLabels) {
		t.Errorf("labels:\n got  %v\n want %v", pod.Labels, wantLabels)
	}
	// The template is the Job's: building a pod must leave it as it was.
	if job.Spec.Tasks[1].Template.Labels[SlotLabel] != "999" || len(job.Spec.Tasks[1].Template.Annotations) != 1 {
		t.Errorf("Pod changed the task template: %v %v", job.Spec.Tasks[1].Template.Labels, job.Spec.Tasks[1].Template.Annotations)
	}
}

func TestPodSchedulerAndPriority(t *testing.T) {
	for _, tc := range []struct {
		name                          string
		template, job, want           string
		tplClass, jobClass, wantClass string
	}{
		{name: "template wins", template: "tpl-sched", job: "job-sched", want: "tpl-sched",
			tplClass: "tpl-pc", jobClass: "job-pc", wantClass: "tpl-pc"},
		{name: "job when template has none", job: "job-sched", want: "job-sched", jobClass: "job-pc", wantClass: "job-pc"},
		{name: "volcano when neither names one", want: "volcano"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testJob()
			job.Spec.SchedulerName = tc.job
			job.Spec.PriorityClassName = tc.jobClass
			job.Spec.Tasks[0].Template.Spec.SchedulerName = tc.template
			job.Spec.Tasks[0].Template.Spec.PriorityClassName = tc.tplClass
			pod := Pod(job, &job.Spec.Tasks[0], 0, 0)
			if pod.Spec.SchedulerName != tc.want {
				t.Errorf("schedulerName = %q, want %q", pod.Spec.SchedulerName, tc.want)
			}
			if pod.Spec.PriorityClassName != tc.wantClass {
				t.Errorf("priorityClassName = %q, want %q", pod.Spec.PriorityClassName, tc.wantClass)
			}
		})
	}
}

func TestPodInheritsFromJob(t *testing.T) {
	for _, tc := range []struct {
		name            string
		jobAnnotations  map[string]string
		jobLabels       map[string]string
		topology        batch.NumaPolicy
		partition       *batch.PartitionPolicySpec
		index           int
		wantAnnotations map[string]string // beyond the ones every pod has
		wantLabels      map[string]string // likewise
	}{
		{name: "nothing to inherit"},
		{
			name: "scheduling annotations",
			jobAnnotations: map[string]string{
				scheduling.PodPreemptable: "true", scheduling.CooldownTime: "60s",
				scheduling.RevocableZone: "*", "unrelated": "no",
			},
			wantAnnotations: map[string]string{
				scheduling.PodPreemptable: "true", scheduling.CooldownTime: "60s", scheduling.RevocableZone: "*",
			},
		},
		{
			name:            "disruption budget: minimum wins over maximum",
			jobAnnotations:  map[string]string{scheduling.JDBMinAvailable: "2", scheduling.JDBMaxUnavailable: "1"},
			wantAnnotations: map[string]string{scheduling.JDBMinAvailable: "2"},
		},
		{
			name:            "disruption budget: maximum alone",
			jobAnnotations:  map[string]string{scheduling.JDBMaxUnavailable: "1"},
			wantAnnotations: map[string]string{scheduling.JDBMaxUnavailable: "1"},
		},
		{
			name:       "labels",
			jobLabels:  map[string]string{scheduling.PodPreemptable: "false", scheduling.CooldownTime: "5m", "team": "a"},
			wantLabels: map[string]string{scheduling.PodPreemptable: "false", scheduling.CooldownTime: "5m"},
		},
		{
			name:            "numa topology policy",
			topology:        batch.SingleNumaNode,
			wantAnnotations: map[string]string{scheduling.NumaPolicyKey: "single-numa-node"},
		},
		{
			name:       "partition of index 5 with partitions of 2",
			partition:  &batch.PartitionPolicySpec{TotalPartitions: 3, PartitionSize: 2},
			index:      5,
			wantLabels: map[string]string{batch.TaskPartitionID: "2"},
		},
		{
			name:       "partition size 0 puts every pod in partition 0",
			partition:  &batch.PartitionPolicySpec{TotalPartitions: 1},
			index:      2,
			wantLabels: map[string]string{batch.TaskPartitionID: "0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testJob()
			job.Annotations = tc.jobAnnotations
			job.Labels = tc.jobLabels
			task := &job.Spec.Tasks[1]
			task.TopologyPolicy = tc.topology
			task.PartitionPolicy = tc.partition
			base := Pod(testJob(), &testJob().Spec.Tasks[1], tc.index, 0)
			pod := Pod(job, task, tc.index, 0)
			wantA := maps.Clone(base.Annotations)
			maps.Copy(wantA, tc.wantAnnotations)
			wantL := maps.Clone(base.Labels)
			maps.Copy(wantL, tc.wantLabels)
			if !maps.Equal(pod.Annotations, wantA) {
				t.Errorf("annotations:\n got  %v\n want %v", pod.Annotations, wantA)
			}
			if !maps.Equal(pod.Labels, wantL) {
				t.Errorf("labels:\n got  %v\n want %v", pod.Labels, wantL)
			}
		})
	}
}

func TestPodVolumes(t *testing.T) {
	job := testJob()
	job.Spec.Volumes = []batch.VolumeSpec{
		{MountPath: "/data", VolumeClaimName: "shared"},
		{MountPath: "/scratch", VolumeClaim: &corev1.PersistentVolumeClaimSpec{}},
		{MountPath: "/again", VolumeClaimName: "shared"}, // the same claim: mounted once
	}
	task := &job.Spec.Tasks[1]
	task.Template.Spec.InitContainers = []corev1.Container{{Name: "init"}}
	task.Template.Spec.Containers = append(task.Template.Spec.Containers, corev1.Container{
		Name: "side", VolumeMounts: []corev1.VolumeMount{{Name: "own", MountPath: "/own"}},
	})
	task.Template.Spec.Volumes = []corev1.Volume{{Name: "own"}}
	pod := Pod(job, task, 0, 0)

	generated := PVCName(job, 1)
	wantVolumes := []corev1.Volume{
		{Name: "own"},
		{Name: volumeName("train", "shared"), VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "shared"}}},
		{Name: volumeName("train", generated), VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: generated}}},
	}
	if !equality.Semantic.DeepEqual(pod.Spec.Volumes, wantVolumes) {
		t.Errorf("volumes:\n got  %+v\n want %+v", pod.Spec.Volumes, wantVolumes)
	}
	jobMounts := []corev1.VolumeMount{
		{Name: volumeName("train", "shared"), MountPath: "/data"},
		{Name: volumeName("train", generated), MountPath: "/scratch"},
	}
	if got := pod.Spec.Containers[0].VolumeMounts; !equality.Semantic.DeepEqual(got, jobMounts) {
		t.Errorf("mounts of container w:\n got  %+v\n want %+v", got, jobMounts)
	}
	wantSide := append([]corev1.VolumeMount{{Name: "own", MountPath: "/own"}}, jobMounts...)
	if got := pod.Spec.Containers[1].VolumeMounts; !equality.Semantic.DeepEqual(got, wantSide) {
		t.Errorf("mounts of container side:\n got  %+v\n want %+v", got, wantSide)
	}
	if got := pod.Spec.InitContainers[0].VolumeMounts; len(got) != 0 {
		t.Errorf("init container got mounts %+v; Volcano mounts job volumes in containers only", got)
	}
	if len(task.Template.Spec.Containers[1].VolumeMounts) != 1 || len(task.Template.Spec.Volumes) != 1 {
		t.Errorf("Pod changed the task template")
	}
	if again := Pod(job, task, 0, 0); !equality.Semantic.DeepEqual(again, pod) {
		t.Errorf("two builds of one pod differ")
	}
}
