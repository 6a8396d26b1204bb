package docker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
)

func overChannel(c *sandbox.Config) { c.ProxyOverChannel = true }

// TestNetworkProxyOverChannel is TestNetworkProxyFromInside with the
// connections carried over the executor's channel: allowed, refused with
// the 403 naming the rule, CONNECT, no bypass, the same audit records, no
// socket mounted, nothing left.
func TestNetworkProxyOverChannel(t *testing.T) { testProxyFromInside(t, "", overChannel) }

// TestNetworkProxyOverChannelUnderGVisor: over the channel, runsc needs no
// --host-uds (no socket is connected from inside).
func TestNetworkProxyOverChannelUnderGVisor(t *testing.T) {
	cli := testutil.RequireDocker(t)
	info, err := cli.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := info.Runtimes["runsc"]; !ok {
		t.Skip("the engine has no runsc runtime")
	}
	testProxyFromInside(t, "runsc", overChannel)
}

// TestNetworkProxyOverChannelRaw: bash's /dev/tcp speaks HTTP to the
// forwarder by hand, plain and CONNECT, while another connection sits idle
// with a request half sent; a denied host gets the 403 naming the rule.
func TestNetworkProxyOverChannelRaw(t *testing.T) {
	n := startNet(t, "", overChannel)
	res := sandboxtest.Exec(t, n.s, `exec 4<>/dev/tcp/127.0.0.1/3128; printf 'GET http://allowed.test:`+n.upstream+`/stalled HTTP/1.1\r\nHo' >&4
exec 3<>/dev/tcp/127.0.0.1/3128
printf 'GET http://allowed.test:`+n.upstream+`/raw HTTP/1.1\r\nHost: allowed.test:`+n.upstream+`\r\nConnection: close\r\n\r\n' >&3
tail -1 <&3; echo
exec 3<>/dev/tcp/127.0.0.1/3128
printf 'CONNECT other.test:`+n.upstream+` HTTP/1.1\r\nHost: other.test:`+n.upstream+`\r\n\r\n' >&3
cat <&3`, 30*time.Second)
	out := string(res.Output)
	if !strings.Contains(out, "hello from upstream /raw") || !strings.Contains(out, "403 Forbidden") || !strings.Contains(out, "network.deny") {
		t.Errorf("raw HTTP over the channel:\n%s", out)
	}
	if _, ok := n.hits.Load("other.test:" + n.upstream + "/"); ok {
		t.Error("a denied host was reached")
	}
	var denied, allowed int
	testutil.Eventually(t, 20*time.Second, "2 net records", func() bool {
		denied, allowed = 0, 0
		for _, r := range n.netRecords(t) {
			switch {
			case r.NetHost == "other.test" && r.Decision == "deny" && r.Rule != "":
				denied++
			case r.NetHost == "allowed.test" && r.Decision == "allow":
				allowed++
			}
		}
		return denied == 1 && allowed == 1
	})
}
