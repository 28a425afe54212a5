package state

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzParseIndexSet: whatever status.completedIndexes or status.failedIndexes hold, reading them
// never panics and gives sorted, disjoint, non-adjacent spans within [0, limit), which read back
// the same from their own String; counting and the lowest missing indexes stay within limit.
func FuzzParseIndexSet(f *testing.F) {
	for _, s := range []string{"", "0", "1,3-5", "5-3", "-1", "1-2-3", "0-9223372036854775807", "9223372036854775807",
		"a,b", ",,,", "3,3,3", "0-2,1-4", "07", "+1", " 1", "1 - 2", "0-0"} {
		f.Add(s, 10)
	}
	f.Add("0-5", 0)
	f.Add("0-5", -3)
	f.Add("2-9223372036854775807", 1<<20)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		limit = min(limit, 1<<20) // completions: the API server caps Indexed Jobs far below
		set := parseIndexSet(s, limit)
		for i, sp := range set {
			if sp.lo < 0 || sp.hi < sp.lo || sp.hi >= limit {
				t.Fatalf("parseIndexSet(%q, %d): span %v out of [0, %d)", s, limit, sp, limit)
			}
			if i > 0 && sp.lo <= set[i-1].hi+1 {
				t.Fatalf("parseIndexSet(%q, %d): spans %v and %v overlap or touch", s, limit, set[i-1], sp)
			}
		}
		if again := parseIndexSet(set.String(), limit); again.String() != set.String() {
			t.Fatalf("parseIndexSet(%q, %d) = %q, which reads back as %q", s, limit, set.String(), again.String())
		}
		if n := set.count(); n < 0 || n > max(limit, 0) {
			t.Fatalf("parseIndexSet(%q, %d): count %d", s, limit, n)
		}
		for _, ix := range set.lowestMissing(5, limit) {
			if ix < 0 || ix >= limit || set.has(ix) {
				t.Fatalf("parseIndexSet(%q, %d): missing index %d", s, limit, ix)
			}
		}
	})
}

// FuzzPodIndexAnnotations: whatever a pod's completion-index and failure-count annotations
// hold, reading them never panics, an index is noIndex or not negative, and a count is between
// 0 and the largest int32.
func FuzzPodIndexAnnotations(f *testing.F) {
	for _, s := range []string{"0", "3", "-1", "", "x", "2147483648", "9223372036854775808", "+4", "0x10"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, index, failures string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			batchv1.JobCompletionIndexAnnotation:          index,
			batchv1.JobIndexFailureCountAnnotation:        failures,
			batchv1.JobIndexIgnoredFailureCountAnnotation: failures,
		}}}
		if ix := completionIndex(p); ix != noIndex && ix < 0 {
			t.Fatalf("completionIndex(%q) = %d", index, ix)
		}
		if c := annotatedFailures(p); c.Failed < 0 || c.Ignored < 0 {
			t.Fatalf("annotatedFailures(%q) = %+v", failures, c)
		}
	})
}
