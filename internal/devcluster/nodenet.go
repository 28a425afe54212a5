package devcluster

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"time"
)

// The real node's pods on a host whose firewall forwards nothing by default.
//
// Two pods on the node's bridge talk at layer 2, but where br_netfilter is
// loaded with net.bridge.bridge-nf-call-iptables=1 every bridged IPv4 frame
// also passes iptables' FORWARD chain. dockerd sets that sysctl and the
// chain's policy to DROP, and then nothing passes between two pods of the
// node: etcd's members never reach each other. The harness accepts its own
// bridge's traffic with one rule, as kube-proxy and Docker accept their own
// (Docker's DOCKER-USER chain is where a user adds more), and leaves the
// policy as it found it. The rule carries a comment naming the bridge: the
// cleanup, the one after a crash included, removes the rules with that
// comment and nothing else.
//
// Before the kubelet starts, a probe checks what the pods will need: a TCP
// connection between two network namespaces on the bridge. If it cannot be
// made, Start fails at once and says what on this host stands in the way.

// bridgeRuleComment marks the FORWARD rule the harness adds for bridge.
func bridgeRuleComment(bridge string) string {
	return "ringfire real node: pods on " + bridge + " reach each other"
}

// bridgeRule is the rule, as iptables' arguments after -I, -C or -D.
func bridgeRule(bridge string) []string {
	return []string{"FORWARD", "-i", bridge, "-o", bridge, "-m", "comment", "--comment", bridgeRuleComment(bridge), "-j", "ACCEPT"}
}

// allowBridge inserts the bridge's ACCEPT rule at the head of FORWARD,
// unless it is there.
func allowBridge(iptables, bridge string) error {
	rule := bridgeRule(bridge)
	if run(iptables, append([]string{"-w", "-t", "filter", "-C"}, rule...)...) == nil {
		return nil
	}
	if err := run(iptables, append([]string{"-w", "-t", "filter", "-I"}, rule...)...); err != nil {
		return fmt.Errorf("allow the traffic between pods on %s: %w", bridge, err)
	}
	return nil
}

// disallowBridge removes every FORWARD rule with the bridge's comment, and
// only those: the harness's, however many a crash left.
func disallowBridge(iptables, bridge string, warn func(string, ...any)) {
	out, err := exec.Command(iptables+"-save", "-t", "filter").Output()
	if err != nil {
		return // no iptables, or no filter table: no rule of ours
	}
	for _, rule := range ownBridgeRules(string(out), bridge) {
		if err := run(iptables, append([]string{"-w", "-t", "filter", "-D"}, rule...)...); err != nil {
			warn("remove the real node's FORWARD rule", "rule", strings.Join(rule, " "), "error", err)
		}
	}
}

// ownBridgeRules picks, of iptables-save's filter table, the FORWARD rules
// with the bridge's comment, as iptables' arguments after -D.
func ownBridgeRules(save, bridge string) [][]string {
	var out [][]string
	for _, line := range strings.Split(save, "\n") {
		rest, ok := strings.CutPrefix(line, "-A FORWARD ")
		if !ok {
			continue
		}
		fields := saveFields("FORWARD " + rest)
		for i := 1; i+1 < len(fields); i++ {
			if fields[i] == "--comment" && fields[i+1] == bridgeRuleComment(bridge) {
				out = append(out, fields)
				break
			}
		}
	}
	return out
}

// hostForwarding is what decides whether a bridged frame passes the host's
// firewall: the bridge-nf sysctl and iptables' FORWARD chain.
type hostForwarding struct {
	bridgeNF string   // net.bridge.bridge-nf-call-iptables: "1", "0", or "" without br_netfilter
	policy   string   // FORWARD's policy: ACCEPT, DROP; "" if unread
	rules    []string // FORWARD's rules as iptables-save prints them
}

func readForwarding(iptables string) hostForwarding {
	var h hostForwarding
	if data, err := os.ReadFile("/proc/sys/net/bridge/bridge-nf-call-iptables"); err == nil {
		h.bridgeNF = strings.TrimSpace(string(data))
	}
	out, err := exec.Command(iptables+"-save", "-t", "filter").Output()
	if err != nil {
		return h
	}
	h.policy, h.rules = parseForward(string(out))
	return h
}

// parseForward reads FORWARD's policy and rules from iptables-save's
// filter table.
func parseForward(save string) (policy string, rules []string) {
	for _, line := range strings.Split(save, "\n") {
		if rest, ok := strings.CutPrefix(line, ":FORWARD "); ok {
			policy, _, _ = strings.Cut(rest, " ")
		} else if strings.HasPrefix(line, "-A FORWARD ") {
			rules = append(rules, line)
		}
	}
	return policy, rules
}

// blockedCause says why bridged traffic between two pods may be dropped,
// given what the probe saw.
func (h hostForwarding) blockedCause(bridge string) string {
	var b strings.Builder
	switch h.bridgeNF {
	case "":
		b.WriteString("br_netfilter is not loaded, so iptables does not see bridged frames; something else on this host drops them (an nftables table of another program? `nft list ruleset`)")
		return b.String()
	case "0":
		fmt.Fprintf(&b, "net.bridge.bridge-nf-call-iptables=0, so iptables' FORWARD chain does not see them (FORWARD policy %s); something else on this host drops them (`nft list ruleset`, `bridge link`)", h.policy)
		return b.String()
	}
	fmt.Fprintf(&b, "net.bridge.bridge-nf-call-iptables=1: every frame between two pods passes iptables' FORWARD chain, whose policy is %s", h.policy)
	if h.policy != "ACCEPT" {
		b.WriteString(" (as dockerd leaves it)")
	}
	own := false
	for _, r := range h.rules {
		if strings.Contains(r, bridgeRuleComment(bridge)) {
			own = true
		}
	}
	if own {
		fmt.Fprintf(&b, "; the harness's ACCEPT rule for %s is there, so a rule before it drops them, or another program's nftables table does (`nft list ruleset`)", bridge)
	} else {
		fmt.Fprintf(&b, "; the harness's ACCEPT rule for %s is missing", bridge)
	}
	b.WriteString(". FORWARD:")
	if len(h.rules) == 0 {
		b.WriteString(" no rules")
	}
	for _, r := range h.rules {
		b.WriteString("\n  " + r)
	}
	return b.String()
}

// bridgeProbe is a TCP connection between two network namespaces on a
// bridge, each with a veth port on it: the path between two pods.
type bridgeProbe struct {
	bridge string
	// The namespaces (ip netns names), the host ends of their veths, and
	// their addresses: a, the client, and b, the server.
	nsA, nsB     string
	vethA, vethB string
	addrA, addrB netip.Prefix
	timeout      time.Duration
}

// nodeProbe is the real node's: two addresses of the pod network that the
// IPAM never gives a pod (nodeRangeEnd).
var nodeProbe = bridgeProbe{
	bridge: nodeBridge,
	nsA:    "ringfire-probe-a", nsB: "ringfire-probe-b",
	vethA: "rfprobe-a", vethB: "rfprobe-b",
	addrA:   netip.MustParsePrefix("10.244.0.253/24"),
	addrB:   netip.MustParsePrefix("10.244.0.254/24"),
	timeout: 3 * time.Second,
}

// check connects from a to b and returns nil, or why the pods of the
// bridge cannot reach each other. The namespaces go when it returns.
func (p bridgeProbe) check(ctx context.Context) error {
	p.remove()
	defer p.remove()
	for _, end := range []struct {
		ns, veth string
		addr     netip.Prefix
	}{{p.nsA, p.vethA, p.addrA}, {p.nsB, p.vethB, p.addrB}} {
		for _, args := range [][]string{
			{"netns", "add", end.ns},
			{"link", "add", end.veth, "type", "veth", "peer", "name", "eth0", "netns", end.ns},
			{"link", "set", end.veth, "master", p.bridge},
			{"link", "set", end.veth, "up"},
			{"-n", end.ns, "addr", "add", end.addr.String(), "dev", "eth0"},
			{"-n", end.ns, "link", "set", "eth0", "up"},
		} {
			if err := run("ip", args...); err != nil {
				return fmt.Errorf("probe the pod network on %s: %w", p.bridge, err)
			}
		}
	}
	ln, err := inNetns(p.nsB, func() (net.Listener, error) {
		return net.Listen("tcp4", netip.AddrPortFrom(p.addrB.Addr(), 0).String())
	})
	if err != nil {
		return fmt.Errorf("probe the pod network on %s: listen in %s: %w", p.bridge, p.nsB, err)
	}
	defer ln.Close()
	start := time.Now()
	var dialErr error
	// A new port comes up in the bridge's listening and learning states
	// for its forward delay (0 for a bridge made by ip link): a first
	// attempt may be lost; within the timeout, connect again.
	for deadline := start.Add(p.timeout); ; {
		attempt := min(time.Until(deadline), time.Second)
		conn, err := inNetns(p.nsA, func() (net.Conn, error) {
			d := net.Dialer{Timeout: attempt, LocalAddr: &net.TCPAddr{IP: p.addrA.Addr().AsSlice()}}
			return d.DialContext(ctx, "tcp4", ln.Addr().String())
		})
		if err == nil {
			conn.Close()
			return nil
		}
		dialErr = err
		if ctx.Err() != nil || !time.Now().Before(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("pods on the real node's bridge %s cannot reach each other: a TCP connection from %s to %s failed for %v (%v): %s",
		p.bridge, p.addrA.Addr(), ln.Addr(), time.Since(start).Round(100*time.Millisecond), dialErr, readForwarding("iptables").blockedCause(p.bridge))
}

// remove deletes the probe's namespaces (their veths go with them) and
// whatever veth of its is left on the host.
func (p bridgeProbe) remove() {
	for _, ns := range []string{p.nsA, p.nsB} {
		if _, err := os.Stat("/run/netns/" + ns); err == nil {
			_ = run("ip", "netns", "del", ns)
		}
	}
	for _, veth := range []string{p.vethA, p.vethB} {
		if _, err := net.InterfaceByName(veth); err == nil {
			_ = run("ip", "link", "del", veth)
		}
	}
}
