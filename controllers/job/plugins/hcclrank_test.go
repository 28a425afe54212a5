package plugins

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestHCCLRank(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		masters  int32
		task     string
		index    int
		preset   string          // the pod's annotation before the plugin runs
		rankEnv  []corev1.EnvVar // the first container's env
		want     string          // the annotation; "" for none
		wantNone bool
	}{
		{name: "master 1", masters: 2, task: "master", index: 1, want: "1"},
		{name: "worker 1 after two masters", masters: 2, task: "worker", index: 1, want: "3"},
		{name: "a task of neither role", masters: 1, task: "other", wantNone: true},
		{name: "the template's annotation is kept", masters: 1, task: "worker", preset: "42", want: "42"},
		{name: "a RANK the container sets", masters: 1, task: "other", rankEnv: []corev1.EnvVar{{Name: "RANK", Value: "7"}}, want: "7"},
		{
			name: "an empty RANK: ranked by task", masters: 1, task: "worker",
			rankEnv: []corev1.EnvVar{{Name: "RANK", ValueFrom: &corev1.EnvVarSource{}}, {Name: "RANK", Value: "9"}}, want: "1",
		},
		{name: "renamed roles", args: []string{"--master=worker", "--worker=other"}, masters: 1, task: "other", index: 0, want: "2"},
		{name: "no master task: a worker's rank is its index", args: []string{"--master=m"}, masters: 1, task: "worker", index: 1, want: "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testJob(task("master", tc.masters), task("worker", 2), task("other", 1))
			pod := podOf(t, job, tc.task, tc.index)
			if tc.preset != "" {
				pod.Annotations[HCCLRankAnnotation] = tc.preset
			}
			pod.Spec.Containers[0].Env = tc.rankEnv
			if err := mustNew(t, "hcclrank", tc.args...).OnPodCreate(pod, job); err != nil {
				t.Fatal(err)
			}
			got, ok := pod.Annotations[HCCLRankAnnotation]
			if ok == tc.wantNone || got != tc.want {
				t.Errorf("annotation %q (set %v), want %q", got, ok, tc.want)
			}
			equal(t, "env", pod.Spec.Containers[0].Env, tc.rankEnv)
		})
	}

	// A pod whose name carries no index cannot be ranked: an error, as in Volcano.
	job := testJob(task("master", 1))
	stray := &corev1.Pod{}
	stray.Name = "stray"
	stray.Annotations = map[string]string{"volcano.sh/task-spec": "master"}
	if err := mustNew(t, "hcclrank").OnPodCreate(stray, job); err == nil {
		t.Error("a master pod without an index gives no error")
	}
}
