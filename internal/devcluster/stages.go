package devcluster

import _ "embed"

// stagesYAML is the KWOK stage configuration: how fake nodes become Ready and
// how pods on them run, end and go away. See the comment at its top.
//
//go:embed stages.yaml
var stagesYAML string
