// Command coredns is CoreDNS with the few plugins the real node's cluster DNS
// needs (the Service and pod records of the kubernetes plugin, a cache, the
// listen address, readiness, errors and query logs), so that building it
// compiles those plugins and not the two hundred modules of CoreDNS's full
// build. It forwards nothing: names outside the cluster get no answer, so no
// query leaves the machine.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	// The plugins' order in a server block, as CoreDNS's plugin.cfg orders them.
	dnsserver.Directives = []string{"bind", "ready", "errors", "log", "cache", "kubernetes"}
}

func main() { coremain.Run() }
