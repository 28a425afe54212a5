package devcluster

import (
	"slices"
	"testing"
)

func TestSaveFields(t *testing.T) {
	for _, tc := range []struct {
		rule string
		want []string
	}{
		{`OUTPUT -j KUBE-SERVICES`, []string{"OUTPUT", "-j", "KUBE-SERVICES"}},
		{`OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`,
			[]string{"OUTPUT", "-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES"}},
		{`PREROUTING -m comment --comment "a \"b\"" -j X`, []string{"PREROUTING", "-m", "comment", "--comment", `a "b"`, "-j", "X"}},
		{`X --comment ""`, []string{"X", "--comment", ""}},
	} {
		if got := saveFields(tc.rule); !slices.Equal(got, tc.want) {
			t.Errorf("saveFields(%q) = %q, want %q", tc.rule, got, tc.want)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/a\040b/c`); got != "/a b/c" {
		t.Errorf("unescapeMount = %q", got)
	}
	if got := unescapeMount(`/plain`); got != "/plain" {
		t.Errorf("unescapeMount = %q", got)
	}
}
