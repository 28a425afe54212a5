package devcluster

import _ "embed"

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
