package migrationtest

import (
	"slices"
	"testing"
)

func TestSSAConflicts(t *testing.T) {
	out := `queue.scheduling.volcano.sh/root serverside-applied
Apply failed with 2 conflicts: conflicts with "helm" using apiextensions.k8s.io/v1:
- .metadata.annotations.controller-gen.kubebuilder.io/version
- .spec.versions
Please review the fields above--they currently have other managers. Here
Apply failed with 1 conflict: conflict with "helm" using apiextensions.k8s.io/v1: .metadata.annotations.controller-gen.kubebuilder.io/version
`
	got := ssaConflicts(out)
	want := []string{"helm .metadata.annotations.controller-gen.kubebuilder.io/version", "helm .spec.versions"}
	if !slices.Equal(got, want) {
		t.Errorf("ssaConflicts = %q, want %q", got, want)
	}
}
