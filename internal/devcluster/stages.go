package devcluster

import (
	_ "embed"
	"time"
)

// stagesYAML is the KWOK stage configuration: how fake nodes become Ready and
// how pods on them run, end and go away. See the comment at its top.
//
//go:embed stages.yaml
var stagesYAML string

// playJQ is the jq program by which a fake node plays a pod's command: how
// long it runs, and whether it runs until deleted. See its comment.
//
//go:embed play.jq
var playJQ string

// KWOKStages returns the KWOK Stage objects the harness gives its fake nodes
// and their pods (stages.yaml, with defaultDuration for pods that do not say
// how long they run), for a kwok that runs elsewhere: e2e/kind applies them
// to the kwok controller it installs in a kind cluster.
func KWOKStages(defaultDuration time.Duration) []byte { return renderStages(defaultDuration, 0) }
