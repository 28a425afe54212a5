package crds

import "testing"

// TestInstallOrder: Queues, then policies, then bindings, and of each policy kind the probed
// policy and its binding written last, so that a passing probe means every policy is enforced.
func TestInstallOrder(t *testing.T) {
	_, others, err := load()
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]string{} // kind → the name written last
	stage := 0
	for _, obj := range installOrder(others) {
		kind := obj.GetKind()
		s := 0
		if _, ok := admissionPolicies[kind]; ok {
			s = 1
			if kind == "ValidatingAdmissionPolicyBinding" || kind == "MutatingAdmissionPolicyBinding" {
				s = 2
			}
		}
		if s < stage {
			t.Errorf("%s %s written after a later stage", kind, obj.GetName())
		}
		stage = s
		last[kind] = obj.GetName()
	}
	want := map[string]string{
		"ValidatingAdmissionPolicy": "ringfire-job-resources", "ValidatingAdmissionPolicyBinding": "ringfire-job-resources",
		"MutatingAdmissionPolicy": "ringfire-job-defaults", "MutatingAdmissionPolicyBinding": "ringfire-job-defaults",
	}
	for kind, name := range want {
		if last[kind] != name {
			t.Errorf("the last %s written is %s, want %s (the one Install probes)", kind, last[kind], name)
		}
	}
}
