package stack

import "testing"

// Case is one case of a suite whose cases share one stack: its subtest's
// name and what it runs.
type Case struct {
	Name string
	Run  func(t *testing.T, s *Stack)
}

// RunParallel runs each case as a subtest of t on s, side by side (each
// calls t.Parallel): the cases must not get in each other's way, each on
// its own objects. The subtests end before t's cleanups run.
func RunParallel(t *testing.T, s *Stack, cases ...Case) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			tc.Run(t, s)
		})
	}
}
