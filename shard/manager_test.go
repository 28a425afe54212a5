package shard

import (
	"errors"
	"slices"
	"testing"
)

// A replica whose lease is in doubt reports its slots in doubt, not held:
// another may hold them already over the lease that ran out.
func TestStatusReportsSlotsInDoubtApart(t *testing.T) {
	st := Status{Held: []int{1, 4, 9}}
	inDoubt(&st, nil)
	if !slices.Equal(st.Held, []int{1, 4, 9}) || st.InDoubt != nil {
		t.Fatalf("with a valid lease: held %v, in doubt %v", st.Held, st.InDoubt)
	}
	inDoubt(&st, errors.New("lease deadline passed"))
	if st.Held != nil || !slices.Equal(st.InDoubt, []int{1, 4, 9}) {
		t.Fatalf("with the lease in doubt: held %v, in doubt %v", st.Held, st.InDoubt)
	}
}
