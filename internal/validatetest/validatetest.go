// Package validatetest checks a configuration's Validate against a table of
// edits, the one way every component's Config is tested: DefaultConfig (with
// what only the caller knows) validates, each field that cannot work is
// named in the error, Validate changes nothing, and the constructor refuses
// what Validate rejects.
package validatetest

import (
	"fmt"
	"strings"
	"testing"
)

// Case is one edit of a valid configuration, and the words its error must
// contain; none: the edited configuration is valid.
type Case[C any] struct {
	Name string
	Edit func(*C)
	Want []string
}

// Run checks each case on a configuration from valid: validate must leave it
// as it was and pass it when the case wants no error, and build (the
// constructor) take it without changing the caller's copy (build gets it by
// value, so only what the copy shares can change: slices, maps, pointees);
// otherwise validate must fail naming every word the case wants, and build
// refuse it too.
func Run[C any](t *testing.T, valid func() C, validate func(*C) error, build func(C) error, cases []Case[C]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			cfg := valid()
			if tc.Edit != nil {
				tc.Edit(&cfg)
			}
			// Compared as printed: DeepEqual never finds two non-nil funcs equal
			// (fake clients hold some); %#v shows pointers and funcs by address,
			// slices by content.
			before := fmt.Sprintf("%#v", cfg)
			err := validate(&cfg)
			if after := fmt.Sprintf("%#v", cfg); after != before {
				t.Errorf("Validate changed the config:\n%s\nto\n%s", before, after)
			}
			if len(tc.Want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if err := build(cfg); err != nil {
					t.Fatalf("the constructor refused a config Validate passes: %v", err)
				}
				if after := fmt.Sprintf("%#v", cfg); after != before {
					t.Errorf("the constructor changed its caller's config:\n%s\nto\n%s", before, after)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate passed, want an error naming %q", tc.Want)
			}
			for _, w := range tc.Want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if build(cfg) == nil {
				t.Error("the constructor took a config Validate rejects")
			}
		})
	}
}
