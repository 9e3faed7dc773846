// Command coredns is CoreDNS v1.15.0 with only the plugins a real-node cluster's DNS uses
// (`lwsconf.realnodes.dns`): the kubernetes plugin answers cluster.local and the reverse zones, and nothing is
// forwarded anywhere (no forward plugin is built in, so no Corefile can send a query off the machine).
//
// CoreDNS runs plugins in the order of dnsserver.Directives; upstream's full list is generated into
// core/dnsserver/zdirectives.go (github.com/coredns/coredns v1.15.0). The list below keeps that order and drops
// every plugin not built in here.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives is a subsequence of upstream's zdirectives.go order.
var directives = []string{
	"ready",
	"health",
	"errors",
	"log",
	"cache",
	"kubernetes",
}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
