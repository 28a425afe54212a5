// Package examples holds the sample Volcano objects that `ringfire dev up`
// submits: Jobs written as a Volcano user writes them, and a second Queue.
// Their pods carry ringfire.io/e2e-* annotations so that on KWOK nodes they
// run for a while and end.
package examples

import "embed"

// Files are the sample manifests, applied in name order.
//
//go:embed *.yaml
var Files embed.FS
