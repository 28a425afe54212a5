package adversarytest

import (
	"fmt"
	"os"
	"testing"
)

// gateEnv turns the suite on. It is off in `make test` until a whole `make test` run with it
// on has been timed on the 2-core CI machine (the suite adds two control planes and about
// 6 minutes to the main lane, with timing bounds of its own: a probe's 5 s and the load's
// p99 of 2 s). Set it to 1 to run the suite.
const gateEnv = "RINGFIRE_ADVERSARY"

func TestMain(m *testing.M) {
	if os.Getenv(gateEnv) != "1" {
		fmt.Printf("adversarytest: off; set %s=1 to run it (see doc.go)\n", gateEnv)
		os.Exit(0)
	}
	os.Exit(m.Run())
}
