// Package vcctltest runs Volcano's own command-line tool, vcctl, against ringfire: a control
// plane with ringfire's CRDs and three ringfire replicas with the gang scheduler (as
// e2e/sidebyside starts them), and the real vcctl binary from $VOLCANO_BIN. Each vcctl command
// is checked by its effect through the API (the Job it made, the Command it issued and the
// controller took, the phases the Job went through, the Queue's state) and by what it printed.
// Without Volcano's programs the tests are skipped.
package vcctltest
