// Command coredns is the CoreDNS of ringfire's kind node image: the plugins
// that the Corefile kubeadm writes for a cluster names (errors, health, ready,
// kubernetes, prometheus, forward, cache, loop, reload, loadbalance) and no
// others, so that kubeadm's CoreDNS Deployment runs unchanged on it while the
// build compiles a tenth of CoreDNS's full plugin set.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func init() {
	// The plugins' order in a server block, as CoreDNS's plugin.cfg orders them.
	dnsserver.Directives = []string{"reload", "health", "ready", "prometheus", "errors", "log", "loadbalance", "cache", "kubernetes", "loop", "forward"}
}

func main() { coremain.Run() }
